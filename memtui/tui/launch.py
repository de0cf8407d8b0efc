"""Open the app on the configured home (being built)."""


def launch() -> int:
    print("memtui: the terminal UI is not built yet; try `memtui status`")
    return 1
