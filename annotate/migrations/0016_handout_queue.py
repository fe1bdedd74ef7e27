"""The hand-out's queue without the held items: ``Item.slots_taken``, the item's live assignments, counted by
triggers on ``annotate_assignment`` so that every path that hands out, answers, releases or deletes an
assignment keeps it (the queue index leaves out the items whose slots are all held); and the index that finds a
worker's open assignment in a study in one probe."""

from django.db import migrations, models

_LIVE = "status <> 'released'"

_POSTGRESQL = [
    f"""CREATE OR REPLACE FUNCTION annotate_item_slots_taken() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' AND OLD.{_LIVE} THEN
            UPDATE annotate_item SET slots_taken = slots_taken - 1 WHERE id = OLD.item_id;
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.{_LIVE} THEN
            UPDATE annotate_item SET slots_taken = slots_taken + 1 WHERE id = NEW.item_id;
        END IF;
        RETURN NULL;
    END $$""",
    f"""CREATE TRIGGER assignment_slots_taken_insert AFTER INSERT ON annotate_assignment
        FOR EACH ROW WHEN (NEW.{_LIVE}) EXECUTE FUNCTION annotate_item_slots_taken()""",
    f"""CREATE TRIGGER assignment_slots_taken_update AFTER UPDATE OF status, item_id ON annotate_assignment
        FOR EACH ROW WHEN ((OLD.{_LIVE}) IS DISTINCT FROM (NEW.{_LIVE}) OR OLD.item_id IS DISTINCT FROM NEW.item_id)
        EXECUTE FUNCTION annotate_item_slots_taken()""",
    f"""CREATE TRIGGER assignment_slots_taken_delete AFTER DELETE ON annotate_assignment
        FOR EACH ROW WHEN (OLD.{_LIVE}) EXECUTE FUNCTION annotate_item_slots_taken()""",
]
_SQLITE = [
    f"""CREATE TRIGGER assignment_slots_taken_insert AFTER INSERT ON annotate_assignment WHEN NEW.{_LIVE}
        BEGIN UPDATE annotate_item SET slots_taken = slots_taken + 1 WHERE id = NEW.item_id; END""",
    f"""CREATE TRIGGER assignment_slots_taken_update AFTER UPDATE OF status, item_id ON annotate_assignment
        WHEN (OLD.{_LIVE}) IS NOT (NEW.{_LIVE}) OR OLD.item_id IS NOT NEW.item_id
        BEGIN
            UPDATE annotate_item SET slots_taken = slots_taken - 1 WHERE id = OLD.item_id AND OLD.{_LIVE};
            UPDATE annotate_item SET slots_taken = slots_taken + 1 WHERE id = NEW.item_id AND NEW.{_LIVE};
        END""",
    f"""CREATE TRIGGER assignment_slots_taken_delete AFTER DELETE ON annotate_assignment WHEN OLD.{_LIVE}
        BEGIN UPDATE annotate_item SET slots_taken = slots_taken - 1 WHERE id = OLD.item_id; END""",
]
_COUNT = f"""UPDATE annotate_item SET slots_taken = (
    SELECT count(*) FROM annotate_assignment a WHERE a.item_id = annotate_item.id AND a.{_LIVE})"""
_TRIGGERS = (
    "assignment_slots_taken_insert",
    "assignment_slots_taken_update",
    "assignment_slots_taken_delete",
)


def create_triggers(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    statements = {"postgresql": _POSTGRESQL, "sqlite": _SQLITE}.get(vendor)
    if statements is None:
        raise RuntimeError(f"no slot-counting triggers written for {vendor}")
    for statement in [*statements, _COUNT]:
        schema_editor.execute(statement)


def drop_triggers(apps, schema_editor) -> None:
    on = " ON annotate_assignment" if schema_editor.connection.vendor == "postgresql" else ""
    for name in _TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}{on}")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION IF EXISTS annotate_item_slots_taken()")


class Migration(migrations.Migration):
    dependencies = [
        ("annotate", "0015_protocol"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="item",
            name="item_queue_idx",
        ),
        migrations.AddField(
            model_name="item",
            name="slots_taken",
            field=models.IntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
        migrations.AddIndex(
            model_name="item",
            index=models.Index(
                condition=models.Q(
                    ("responses_done__lt", models.F("responses_needed")),
                    ("retired", False),
                    ("slots_taken__lt", models.F("responses_needed")),
                ),
                fields=["study", "round", "position", "id"],
                name="item_queue_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                condition=models.Q(("status", "assigned")),
                fields=["worker", "study"],
                name="assignment_held_idx",
            ),
        ),
    ]
