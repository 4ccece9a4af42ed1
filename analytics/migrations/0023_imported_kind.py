from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('analytics', '0022_sketched_days'),
    ]

    operations = [
        migrations.AddField(
            model_name='importedlog',
            name='kind',
            field=models.CharField(default='log', max_length=16),
        ),
    ]
