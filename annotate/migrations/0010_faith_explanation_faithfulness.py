from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0009_fidelity_explanation_diagnostics'),
    ]

    operations = [
        migrations.AddField(
            model_name='explanation',
            name='faithfulness',
            field=models.JSONField(blank=True, null=True),
        ),
    ]
