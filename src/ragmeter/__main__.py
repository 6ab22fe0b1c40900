from ragmeter.cli.launch import run

run()
