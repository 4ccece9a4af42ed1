"""The realtime HLLs' retention in minutes, 10 by default (it was 2 hours): the realtime
count reads the last 5 minutes and nothing reads an older minute, while a busy minute's
HLL is 12 KB (120 of them a busy site held for nothing). A site still at the old default
gets the new one; a retention an operator chose is kept, in minutes."""
import django.core.validators
from django.db import migrations, models

OLD_DEFAULT_HOURS = 2
NEW_DEFAULT_MINUTES = 10


def to_minutes(apps, schema_editor):
    Site = apps.get_model("analytics", "Site")
    for site in Site.objects.exclude(keep_realtime_hours=OLD_DEFAULT_HOURS):
        site.keep_realtime_minutes = site.keep_realtime_hours * 60
        site.save(update_fields=["keep_realtime_minutes"])


def to_hours(apps, schema_editor):
    Site = apps.get_model("analytics", "Site")
    for site in Site.objects.all():
        site.keep_realtime_hours = max(1, -(-site.keep_realtime_minutes // 60))
        site.save(update_fields=["keep_realtime_hours"])


class Migration(migrations.Migration):

    dependencies = [
        ("analytics", "0015_segment_retention"),
    ]

    operations = [
        migrations.AddField(
            model_name="site",
            name="keep_realtime_minutes",
            field=models.PositiveIntegerField(
                default=NEW_DEFAULT_MINUTES,
                help_text="per-minute realtime HLLs: the realtime count reads the last 5 minutes (a busy minute's HLL is 12 KB)",
                validators=[django.core.validators.MinValueValidator(5)],
                verbose_name="keep realtime HLLs (minutes)",
            ),
        ),
        migrations.RunPython(to_minutes, to_hours),
        migrations.RemoveField(model_name="site", name="keep_realtime_hours"),
    ]
