"""The typer front end: parsing and printing only. One module per command group."""
