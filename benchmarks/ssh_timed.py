"""Benchmark helper (benchmarks/profile_run.py): runs ssh with the arguments given, passing its
standard input and output through, and appends to $BENCH_SSH_TIMES one line per ssh client:
its CPU seconds (user system, getrusage of the child, microseconds) and the bytes it was sent
(with pipelining: the module's payload) and gave back (the module's result). Ansible runs it
through ssh_timed.sh, its ssh_executable (ANSIBLE_SSH_EXECUTABLE). Exits with ssh's status."""
import os
import resource
import subprocess
import sys
import threading


def pump(source, sink, counted):
    """Copy SOURCE (a file descriptor) to SINK (a binary file) until end of file, counting
    the bytes in counted[0]; then close SINK."""
    try:
        while True:
            chunk = os.read(source, 65536)
            if not chunk:
                break
            counted[0] += len(chunk)
            sink.write(chunk)
            sink.flush()
    except (OSError, ValueError):
        pass
    finally:
        try:
            sink.close()
        except (OSError, ValueError):
            pass


def main():
    proc = subprocess.Popen(['ssh'] + sys.argv[1:], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    sent, received = [0], [0]
    # stdin in a thread of its own: ssh may answer (a become marker) before it is sent all
    feeder = threading.Thread(target=pump, args=(sys.stdin.fileno(), proc.stdin, sent))
    feeder.daemon = True
    feeder.start()
    pump(proc.stdout.fileno(), sys.stdout.buffer, received)
    status = proc.wait()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.environ['BENCH_SSH_TIMES'], 'a') as handle:
        handle.write('%.6f %.6f %d %d\n' % (usage.ru_utime, usage.ru_stime, sent[0], received[0]))
    return status


if __name__ == '__main__':
    sys.exit(main())
