"""The assignments' foreign key to their study loses its index: the hand-out's release of expired
assignments, planned once per connection, could be planned through it and then read every assignment of
the study on every hand-out; ``assignment_open_expiry_idx`` is left the only index with the study first that
it can use. One index entry fewer is written per hand-out and per answer. The expiry and held indexes each
take a condition that is always true (expiry, or the provider's unit, not NULL) and that only the query
naming that column implies, so that the release and the held check cannot take each other's index.

The foreign key's own index is dropped by name rather than by altering the field, which on SQLite would
rebuild the table and lose the triggers that keep ``Item.slots_taken`` (migration 0016)."""

import django.db.models.deletion
from django.db import migrations, models


def _study_indexes(schema_editor, model) -> list[str]:
    """The foreign key's index on the study column, whatever its generated name (not a named index of the
    model's own on that column, such as ``assignment_unconfirmed_idx``)."""
    declared = {index.name for index in model._meta.indexes}
    with schema_editor.connection.cursor() as cursor:
        found = schema_editor.connection.introspection.get_constraints(cursor, model._meta.db_table)
    return [
        name
        for name, info in found.items()
        if info["index"]
        and not info["unique"]
        and not info["primary_key"]
        and info["columns"] == ["study_id"]
        and name not in declared
    ]


def drop_study_index(apps, schema_editor):
    model = apps.get_model("annotate", "Assignment")
    for name in _study_indexes(schema_editor, model):
        schema_editor.execute(schema_editor._delete_index_sql(model, name))


def create_study_index(apps, schema_editor):
    model = apps.get_model("annotate", "Assignment")
    if not _study_indexes(schema_editor, model):
        schema_editor.execute(schema_editor._create_index_sql(model, fields=[model._meta.get_field("study")]))


class Migration(migrations.Migration):
    dependencies = [
        ("annotate", "0017_unconfirmed_holders"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="assignment",
                    name="study",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="assignments",
                        to="annotate.study",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(drop_study_index, create_study_index)],
        ),
        migrations.RemoveIndex(model_name="assignment", name="assignment_open_expiry_idx"),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                condition=models.Q(("status", "assigned"), ("expires_at__isnull", False)),
                fields=["study", "expires_at"],
                name="assignment_open_expiry_idx",
            ),
        ),
        migrations.RemoveIndex(model_name="assignment", name="assignment_held_idx"),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                condition=models.Q(("status", "assigned"), ("provider_assignment_id__isnull", False)),
                fields=["worker", "study"],
                name="assignment_held_idx",
            ),
        ),
    ]
