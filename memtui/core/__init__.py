"""What every layer uses: settings, paths, the clock, private files."""
