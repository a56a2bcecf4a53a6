"""A training job's DataLoader with the file_system sharing strategy that outlives its user's
login session (issue 13.3, the RemoveIPC canary). Workers build batches in /dev/shm/torch_*
files faster than the main process takes them, so batches whose files are not yet opened by
the main process are always waiting. Usage: removeipc_job.py MARKER STOP BATCHES; writes
MARKER after the first batch, stops after BATCHES or at the first batch after the file STOP
appears, then prints 'ok', or fails with PyTorch's error.

``removeipc_job.py MARKER STOP EPOCHS semaphore`` (issue 33.7, mlcommons/storage#528): the
dataset holds a multiprocessing Lock of the spawn context (a named POSIX semaphore,
/dev/shm/sem.mp-*, kept by name until the job ends; forkserver, Python 3.14's default start
method on Linux, does the same), and each epoch starts new workers that open it by name. It
prints the semaphore files it created, writes MARKER after the first epoch and runs epochs
until STOP appears, then one more (its workers start after STOP), then prints 'ok'; a worker
that cannot open the semaphore fails with Python's FileNotFoundError and the DataLoader with
"DataLoader worker (pid(s) ...) exited unexpectedly"."""
import glob
import multiprocessing
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, count):
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return torch.full((1024,), float(index))


def main():
    marker, stop, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # set before the workers fork (they inherit it); the semaphore job keeps the default, so
    # that no torch_* file is involved there
    torch.multiprocessing.set_sharing_strategy('file_system')
    loader = DataLoader(Samples(batches * 4), batch_size=4, num_workers=2, prefetch_factor=4)
    seen = 0
    for _batch in loader:
        seen += 1
        if seen == 1:
            with open(marker, 'w') as handle:
                handle.write('started\n')
        if os.path.exists(stop):
            break
        time.sleep(0.1)
    print('ok %d batches' % seen)


class Locked(Samples):
    """Samples whose workers take a lock shared with the main process (a named semaphore)."""

    def __init__(self, count, lock):
        super(Locked, self).__init__(count)
        self.lock = lock

    def __getitem__(self, index):
        with self.lock:
            return super(Locked, self).__getitem__(index)


def semaphore(marker, stop, epochs):
    ctx = multiprocessing.get_context('spawn')
    before = set(glob.glob('/dev/shm/sem.mp-*'))
    lock = ctx.Lock()
    print('semaphores %s' % ' '.join(sorted(set(glob.glob('/dev/shm/sem.mp-*')) - before)),
          flush=True)
    loader = DataLoader(Locked(8, lock), batch_size=2, num_workers=1, multiprocessing_context=ctx)
    done = 0
    while done < epochs:
        last = os.path.exists(stop)
        for _batch in loader:
            pass
        done += 1
        if done == 1:
            with open(marker, 'w') as handle:
                handle.write('started\n')
        if last:
            break
    print('ok %d epochs' % done)


if __name__ == '__main__':
    if sys.argv[4:] == ['semaphore']:
        semaphore(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        main()
