"""One module per screen; every screen shows the status bar, its body, running work and the footer."""
