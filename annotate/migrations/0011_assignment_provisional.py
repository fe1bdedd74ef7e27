from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0010_faith_explanation_faithfulness'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='assignment',
            name='assignment_one_live_per_worker_item',
        ),
        migrations.AddField(
            model_name='assignment',
            name='provisional',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddConstraint(
            model_name='assignment',
            constraint=models.UniqueConstraint(condition=models.Q(('status', 'released'), _negated=True), fields=('item', 'worker', 'provider_assignment_id'), name='assignment_one_live_per_worker_item'),
        ),
    ]
