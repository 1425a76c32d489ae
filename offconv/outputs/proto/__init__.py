"""perftools.profiles messages for the pprof output: ``profile.proto`` (pprof's names and
field numbers) and ``profile_pb2.py`` generated from it by grpcio-tools' protoc:

    python -m grpc_tools.protoc -I. --python_out=. offconv/outputs/proto/profile.proto

(run from the repository root with the dev extra, ``pip install -e ".[dev]"``; commit both).
"""
