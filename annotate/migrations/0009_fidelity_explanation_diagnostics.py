from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0008_publish_invites_and_crowd_actions'),
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
