from timeline.cli import main

main()
