from gateway.commands.cli import main

raise SystemExit(main())
