"""Rows written by the rollups: one executemany of INSERT ... ON CONFLICT DO UPDATE a chunk.

Django's bulk_create builds a model and each value's SQL in Python: 16 of a rollup's 28 s
under cProfile (60 days, 300,000 events). These statements take plain tuples instead; both
SQLite and PostgreSQL speak ON CONFLICT ... DO UPDATE SET col = EXCLUDED.col.
"""

from datetime import date

from django.db import connection, transaction
from django.db.models import DateField

UPSERT_ROWS = 500  # rows a write transaction holds: SQLite's one write lock is never held long


def upsert(model, columns: tuple[str, ...], rows: list[tuple], unique: int):
    """Insert or update rows (tuples of the model's `columns`, by attname; the first
    `unique` are its unique constraint, the rest are updated), a chunk a transaction: one
    bulk_create held its whole list in one transaction, and a day of a million junk rows
    held SQLite's write lock 34-40 s (logins and the drainer failed meanwhile). Readers
    may meet a day's rows half rewritten while it runs: each row is whole, old or new."""
    if not rows:
        return
    opts, quote = model._meta, connection.ops.quote_name
    fields = [opts.get_field(column) for column in columns]
    names = [quote(field.column) for field in fields]
    sql = (
        f"INSERT INTO {quote(opts.db_table)} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))}) "
        f"ON CONFLICT ({', '.join(names[:unique])}) DO UPDATE SET "
        + ", ".join(f"{name} = EXCLUDED.{name}" for name in names[unique:])
    )
    dated = [at for at, field in enumerate(fields) if isinstance(field, DateField)]
    if dated:  # (a date as the backend stores it, adapted once per distinct day)
        adapt = connection.ops.adapt_datefield_value
        seen: dict[date, object] = {}
        for at in dated:
            seen.update({row[at]: None for row in rows})
        adapted = {day: adapt(day) for day in seen}
        for at in dated:
            rows = [(*row[:at], adapted[row[at]], *row[at + 1 :]) for row in rows]
    for at in range(0, len(rows), UPSERT_ROWS):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(sql, rows[at : at + UPSERT_ROWS])
