"""systemd's value grammar (limits_model.from_systemd_config), checked against systemd 252.

Every row was seen with `systemctl show` after `daemon-reexec` in the gpufleet-node:debian12
container (systemd 252.39): None means systemd ignored the assignment.
"""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m

U = m.UNLIMITED
L = m.Limit
K, M, G = 1024, 1024 ** 2, 1024 ** 3


@pytest.mark.parametrize('item,text,expected', [
    ('nofile', '2000', L(2000, 2000)),
    ('nofile', '', None),
    ('nofile', ' 3000 ', L(3000, 3000)),
    ('nofile', '3000 :4000', None),            # blank before the colon
    ('nofile', '3000: 4000', L(3000, 4000)),   # blank after it is fine
    ('nofile', '3000:', None),
    ('nofile', ':3000', None),
    ('nofile', '0x100', L(256, 256)),
    ('nofile', '010', L(8, 8)),                # strtoull base 0: octal
    ('nofile', '+300', L(300, 300)),
    ('nofile', '2K', None),
    ('nofile', '"4000"', None),
    ('nofile', '4000 # c', None),
    ('nofile', 'infinity:infinity', L(U, U)),
    ('nofile', 'INFINITY', None),
    ('nofile', '3000: infinity', None),
    ('nofile', '18446744073709551615', None),
    ('nofile', '18446744073709551616', None),
    ('memlock', '2k', None),
    ('memlock', '2KB', None),
    ('memlock', '2B', L(2, 2)),
    ('memlock', '1.5K', L(1536, 1536)),
    ('memlock', '2 K', L(2 * K, 2 * K)),
    ('memlock', '2Ki', None),
    ('memlock', '8M :16M', None),
    ('memlock', '8M: 16M', L(8 * M, 16 * M)),
    ('memlock', '1G 512M', L(G + 512 * M, G + 512 * M)),
    ('memlock', '0.5', L(0, 0)),
    ('memlock', '17179869184G', None),
    ('memlock', '18446744073709551615', None),
    ('stack', '8M:infinity', L(8 * M, U)),
    ('msgqueue', '8K', L(8 * K, 8 * K)),
    ('cpu', '2min', L(120, 120)),
    ('cpu', '90', L(90, 90)),
    ('cpu', '1h30min', L(5400, 5400)),
    ('cpu', '0.5s', L(1, 1)),
    ('cpu', '1500ms', L(2, 2)),
    ('cpu', 'infinity', L(U, U)),
    ('nice', '-5', L(25, 25)),
    ('nice', '5', L(5, 5)),
    ('nproc', '5000:4000', None),
    ('nproc', 'infinity:100', None),
])
def test_systemd_252_grammar(item, text, expected):
    if expected is None:
        with pytest.raises(m.LimitError):
            m.from_systemd_config(item, text)
    else:
        assert m.from_systemd_config(item, text) == expected


@pytest.mark.parametrize('item,limit', [
    ('nofile', L(1024, 524288)), ('memlock', L(U, U)), ('stack', L(8 * M, U)),
    ('core', L(0, U)), ('cpu', L(3600, 7200)), ('nice', L(25, 30)), ('msgqueue', L(819200, 819200)),
    ('memlock', L(1536, 1536)), ('nproc', L(4096, 4096)),
])
def test_what_we_write_reads_back(item, limit):
    assert m.from_systemd_config(item, m.to_systemd(item, limit)) == limit


def test_error_names_the_place():
    with pytest.raises(m.LimitError, match=r'^/etc/x.conf:3: systemd cannot parse'):
        m.from_systemd_config('nofile', 'lots', '/etc/x.conf:3')
