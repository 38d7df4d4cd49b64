from probebook.cli import run

run()
