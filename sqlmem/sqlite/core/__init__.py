"""The file itself: opening and migrating it, the one writer and its readers, the
calls into them, and maintenance (check, checkpoint, vacuum, backup, purge)."""
