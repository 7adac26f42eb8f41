"""Every session's state and its one owner (sessions.py): stores, journals, faults, schedules, snapshots."""
