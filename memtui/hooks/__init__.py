"""The agents' own hooks: installing, checking and removing them (the command they run is
``memtui.hook_entry``, stdlib-only and kept at its installed name)."""
