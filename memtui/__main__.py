from memtui.cli import main

raise SystemExit(main())
