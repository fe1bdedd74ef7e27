"""A study's life beside its kind: the lifecycle (start, pause, finish), drafts (edit, delete, clone) and progress."""
