from leaf_cli.cli.main import run

run()
