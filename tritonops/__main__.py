from tritonops.cli.main import program

program()
