"""A memory budget for each site's Bloom filters together (analytics.dedup.bloom says
why): existing sites get the default, 256 MB. Filters made before the budget go on its
books when next touched, or at once with `manage.py recount_bloom`."""
import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analytics', '0016_realtime_minutes'),
    ]

    operations = [
        migrations.AddField(
            model_name='site',
            name='bloom_max_memory_mb',
            field=models.PositiveIntegerField(default=256, help_text="all the site's filters together; at the budget, visitors without a filter get none and full filters do not grow (their page views still count), until filters expire", validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(1048576)], verbose_name='Bloom memory budget (MB)'),
        ),
    ]
