"""Estimates of a segment's visitors where its day bitmaps cannot say (analytics.queries
.segments): a value past the day's first values has no bitmap, but every value has a
HyperLogLog of its visitors, and inclusion-exclusion over HLL unions estimates an
intersection. Each union is one multi-key PFCOUNT (±0.81%); the error of the difference
grows with the number of filters, which is why a filter set is capped and the answer says
"estimate": true.
"""

from datetime import date
from itertools import combinations

import redis

from ..counts import fold, sketches


def estimate(r: redis.Redis, segment, ranges: list[list[date]]) -> list[int]:
    """The segment's visitors over each list of days, from HLLs by inclusion-exclusion:
    |A and B and not C| = I(A, B) - I(A, B, C), I(the sets) = the sum over every nonempty
    subset S of (-1)^(|S|+1) |union of S| (one PFCOUNT each), I() = the site's visitors."""
    sid = segment.site.id
    fold.ensure_hlls(
        r, sid, [(day, name) for days in ranges for day in days for term in segment.terms[day] for name in term.fields]
    )
    pipe = r.pipeline(transaction=False)
    plans = []
    for days in ranges:
        positives: list[list[str]] = []
        negative: list[str] = []
        for i in range(len(segment.filters)):
            hlls = [segment.hll(day, name) for day in days for name in segment.terms[day][i].fields]
            if segment.terms[days[0]][i].negate:
                negative += hlls
            else:
                positives.append(hlls)
        universe_keys = [segment.hll(day, sketches.SITE) for day in days]
        plan: dict[tuple[int, tuple[int, ...]] | str, int] = {}
        for sets in ([*positives], [*positives, negative] if negative else None):
            if sets is None:
                continue
            for k in range(1, len(sets) + 1):
                for chosen in combinations(range(len(sets)), k):
                    union = sorted({key for c in chosen for key in sets[c]})
                    signature = (len(sets), chosen)
                    if union:
                        plan[signature] = len(pipe)
                        pipe.pfcount(*union)
        plan["universe"] = len(pipe)
        pipe.pfcount(*universe_keys)
        plans.append((plan, len(positives), bool(negative)))
    answers = pipe.execute()
    result = []
    for plan, p, negated in plans:
        universe = int(answers[plan["universe"]])

        def intersection(n, universe=universe, plan=plan):
            if n == 0:
                return universe
            total = 0
            for k in range(1, n + 1):
                for chosen in combinations(range(n), k):
                    position = plan.get((n, chosen))
                    total += (-1) ** (k + 1) * (int(answers[position]) if position is not None else 0)
            return total

        value = intersection(p) - (intersection(p + 1) if negated else 0)
        result.append(max(0, min(round(value), universe)))
    return result
