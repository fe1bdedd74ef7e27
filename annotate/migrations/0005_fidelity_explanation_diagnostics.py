from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0004_response_verification'),
    ]

    operations = [
        migrations.AddField(
            model_name='explanation',
            name='counter_scores',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='explanation',
            name='diagnostics',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
