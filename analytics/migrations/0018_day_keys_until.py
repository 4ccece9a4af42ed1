"""When each stored day's raw keys expire (analytics.rollups.expiry records it as it sets
their EXPIREAT): readers then know a day's source from its row, not by probing keys, and
ingest knows which days are sealed. Rows from before are read by the policy's rule."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analytics', '0017_bloom_budget'),
    ]

    operations = [
        migrations.AddField(
            model_name='dailymetrics',
            name='page_keys_until',
            field=models.DateTimeField(null=True, blank=True, help_text="when the day's page keys (index, HLLs, counters) expire"),
        ),
        migrations.AddField(
            model_name='dailymetrics',
            name='keys_until',
            field=models.DateTimeField(null=True, blank=True, help_text="when the day's other raw keys expire: from then on its rows are the record"),
        ),
        migrations.AddField(
            model_name='dailymetrics',
            name='page_merge_token',
            field=models.CharField(max_length=32, blank=True, default='', help_text='the last page merge added (rollups.expiry)'),
        ),
        migrations.AddField(
            model_name='dailymetrics',
            name='segment_keys_until',
            field=models.DateTimeField(null=True, blank=True, help_text="when the day's filter bitmaps expire"),
        ),
    ]
