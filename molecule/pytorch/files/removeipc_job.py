"""A training job's DataLoader with the file_system sharing strategy that outlives its user's
login session (issue 13.3, the RemoveIPC canary). Workers build batches in /dev/shm/torch_*
files faster than the main process takes them, so batches whose files are not yet opened by
the main process are always waiting. Usage: removeipc_job.py MARKER STOP BATCHES; writes
MARKER after the first batch, stops after BATCHES or at the first batch after the file STOP
appears, then prints 'ok', or fails with PyTorch's error."""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

torch.multiprocessing.set_sharing_strategy('file_system')


class Samples(Dataset):
    def __init__(self, count):
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return torch.full((1024,), float(index))


def main():
    marker, stop, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
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


if __name__ == '__main__':
    main()
