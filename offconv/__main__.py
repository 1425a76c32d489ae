try:
    from offconv.launch import main
except KeyboardInterrupt:   # Ctrl-C while Python starts: no traceback (launch.main says it later)
    import os
    import sys
    sys.stderr.write("offconv: interrupted\n")
    os._exit(130)

main()
