#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz harness into corpus/<harness>/ (checked in).

The frames follow transport/bootstrap/wire.h, written here independently. Rerun after a wire
format change: python3 tests/fuzz/make_corpus.py

api_sequence's programs follow the decoder in api_sequence.cc. The reproducers of the bugs it
found (issue 22) are in known/api_sequence/<bug>-NN, replayed beside the corpus as regressions:
build/tests/fuzz/fuzz_api_sequence_replay -runs=0 tests/fuzz/known/api_sequence/<file>.
"""
import hashlib
import hmac
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = bytes([1, 2, 3]) + bytes(29)  # the key the hello/reply harnesses check MACs with
ROOT_NONCE = bytes([4, 5, 6]) + bytes(29)
RANK_NONCE = bytes([8]) + bytes(31)


def le(v, n):
    return (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")


def hello(rank, nranks, worker, host, version=2, secret=SECRET, reserved=0):
    body = worker + host
    h = (b"SVBH" + le(version, 2) + le(reserved, 2) + le(rank, 4) + le(nranks, 4) +
         le(len(worker), 4) + le(len(host), 4) + RANK_NONCE + hashlib.sha256(body).digest())
    mac = hmac.new(secret, ROOT_NONCE + h, hashlib.sha256).digest()
    return h + mac + body


def table(infos):
    return b"".join(le(len(w), 4) + le(len(h), 4) + w + h for w, h in infos)


def reply(kind, body, version=2):
    h = b"SVBR" + le(version, 2) + le(kind, 2) + le(len(body), 8) + hashlib.sha256(body).digest()
    return h + hmac.new(SECRET, RANK_NONCE + h, hashlib.sha256).digest() + body


def unique_id(family, port, addr, secret, version=2, scope=0):
    out = b"SIEV" + le(version, 2) + le(family, 2) + le(port, 2) + le(0, 2) + le(scope, 4)
    out += addr.ljust(16, b"\0") + secret
    return out.ljust(128, b"\0")


def write(harness, seeds, folder="corpus", prefix="seed"):
    d = os.path.join(HERE, folder, harness)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    for i, s in enumerate(seeds):
        name = "%s-%02d" % (prefix, i) if isinstance(s, bytes) else "%s-%02d" % (s[0], i)
        with open(os.path.join(d, name), "wb") as f:
            f.write(s if isinstance(s, bytes) else s[1])


def main():
    rng = random.Random(1130)
    ucx = bytes(rng.randrange(256) for _ in range(180))
    hellos = [hello(0, 4, ucx, b"node1#4242"), hello(3, 4, b"", b""),
              hello(1, 2, b"\0\1\2", b"h\0st"), hello(0, 1, ucx, b"x", version=1),
              hello(0, 2, b"a", b"b", reserved=1), hello(0, 2, b"a", b"b")[:60],
              hello(0, 2, b"ab", b"c")[:-1], b"GET / HTTP/1.1\r\n\r\n"]
    write("bootstrap_hello", [bytes([i % 2]) + h for i, h in enumerate(hellos)])

    infos = [(ucx, b"node1#1"), (b"", b"node2#2"), (b"\0" * 7, b"")]
    challenge = b"SVBC" + le(2, 2) + le(0, 2) + ROOT_NONCE
    replies = [bytes([0]) + challenge, bytes([0]) + b"SVBC" + le(3, 2) + bytes(34),
               bytes([2]) + reply(0, table(infos)), bytes([0]) + reply(1, b"rank 2 of 3 never joined"),
               bytes([2]) + table(infos), bytes([0]) + table(infos[:1]),
               bytes([1]) + table(infos[:2])[:-3], bytes([5]) + reply(0, b"")[:40]]
    write("bootstrap_reply", replies)

    v4 = unique_id(4, 29500, bytes([127, 0, 0, 1]), bytes(range(32)))
    v6 = unique_id(6, 443, bytes(15) + b"\1", bytes(range(32, 64)), scope=2)
    write("unique_id", [v4, v6, v4.hex().encode(), v6.hex().upper().encode(),
                        unique_id(4, 1, bytes(4), bytes(32), version=1), v4[:100]])

    write("host_id", [b"node1#4242", b"node-with#hash#77", b"nohash", b"h#", b"h#99999999999999999",
                      b"h#-5", b"\0#12x"])

    def d2ft_seed(nranks, segments, table, short=0):
        out = bytes([nranks - 1, len(segments) - 1])
        for length, holders in segments:
            out += bytes([length]) + le(holders, 2)
        return out + bytes(table) + bytes([short])
    write("d2ft_plan", [d2ft_seed(4, [(3, 0b1111), (2, 0b0011), (4, 0b1100)], [0b001, 0b011, 0b100, 0]),
                        d2ft_seed(2, [(1, 0b11)] * 9, [0xff, 0x01, 0x00, 0x00]),
                        d2ft_seed(3, [(2, 0b001), (2, 0b110)], [0b01, 0b01, 0b10]),
                        d2ft_seed(8, [(4, 0xff)] * 20, list(range(24)), short=1)])

    # Fingerprint and verdict (layouts in src/algo/op_header.cc; magics and version read from it).
    src = open(os.path.join(HERE, "..", "..", "src", "algo", "op_header.cc")).read()
    import re
    magics = [int(m, 16) for m in re.findall(r"k(?:Fingerprint|Verdict)Magic = (0x[0-9a-fA-F]+)", src)]
    version = int(re.search(r"kVersion = (\d+)", src).group(1))
    fp_magic, verdict_magic = (magics + [0, 0])[:2]
    fp = le(fp_magic, 4) + le(version, 2) + le(0, 2) + le(12, 4) + bytes([1, 7, 0, 1]) + le(-1, 4) + \
        le(0, 4) + le(1000, 8) + le(524288, 8) + le(0, 8)
    fp2 = le(fp_magic, 4) + le(version, 2) + le(0, 2) + le(99, 4) + bytes([200, 250, 9, 77]) + le(3, 4) + \
        le(0, 4) + le(2**63, 8) + le(1, 8) + le(12345, 8)
    write("op_header", [fp, fp2, le(verdict_magic, 4) + le(5, 4) + le(1, 2) + le(version, 2),
                        le(verdict_magic, 4) + le(6, 4) + le(0, 2) + le(version, 2), fp[:20]])

    def pairs(rows):
        return b"".join(le(c, 8) + le(h, 8) for c, h in rows)
    write("agreement", [bytes([0, 1, 0]) + pairs([(100, 7)] * 4),
                             bytes([1, 0, 1]) + pairs([(100, 7), (100, 8), (99, 7)]),
                             bytes([1, 1, 0]) + pairs([(5, 5)]), bytes([0, 1, 1]) + pairs([(1, 2)] * 9),
                        bytes([0, 0, 0]) + pairs([(1, 64), (5, 9)] * 3),
                        bytes([0, 0, 0]) + pairs([(1, 64), (5, 9), (1, 64), (6, 9), (0, 64), (5, 9)])])

    def unpack_seed(nranks, k, acc, payload):
        return le(nranks - 2, 4) + le(k - 1, 4) + bytes([acc]) + payload
    write("ternary_unpack", [unpack_seed(2, 1, 0, bytes(rng.randrange(256) for _ in range(64))),
                             unpack_seed(8, 7, 1, bytes(rng.randrange(256) for _ in range(97))),
                             unpack_seed(300, 300, 1, bytes(rng.randrange(256) for _ in range(200))),
                             unpack_seed(100000, 65537, 0, bytes(rng.randrange(256) for _ in range(333)))])

    def scales_seed(block, nranks, avg, scales, sums):
        return bytes([block - 1, nranks - 1, avg]) + b"".join(struct.pack("<f", s) for s in scales) + bytes(sums)
    nan, inf = float("nan"), float("inf")
    write("ternary_scales", [scales_seed(4, 4, 0, [1.5, 0.25, 3.0, 7.0], [1, 255, 3, 0, 2, 254] * 4),
                             scales_seed(2, 8, 1, [nan, inf, -inf, -2.0, 1e-45, 0.0], [8, 248] * 12),
                             scales_seed(64, 1, 1, [65504.0 * 4], [1] * 4)])


# api_sequence: the byte layout of Decode/DecodeStep in api_sequence.cc.
KINDS = ["AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "SendRecv", "Group",
         "MaskRegister", "Masked", "Ternary", "LayoutEqual", "LayoutRegister", "Subnet", "D2ft",
         "Deregister", "Split", "Query", "ReduceScatterQuantized", "AllGatherQuantized", "TopK"]
BADS = ["none", "count0", "count+1", "countHuge", "dtypeOther", "dtypeInvalid", "opOther",
        "opInvalid", "rootOther", "rootInvalid", "sendNull", "recvNull", "commNull", "inPlace",
        "overlap", "kindOther", "seedOther", "blockOther", "blockHuge", "paramsNull", "bitsOther",
        "policyOther", "handleNull", "outNull"]
TERNARY_BLOCKS = [0, 1, 3, 7, 16, 64, 2048]


def step(kind, count=37, dtype=7, op=0, in_place=0, root=0, slot=0, policy=0, variant=0, seed=1,
         block=0, bad=None, rank=None, members=()):
    """One step; bad on `rank` (None: every rank). count: 0..63 or 1 + 37k up to 4700."""
    c = count if count < 64 else 0x80 | ((count - 1) // 37)
    out = bytes([KINDS.index(kind), c, dtype + 10 * op + 50 * in_place,
                 root | slot << 2 | policy << 3 | variant << 4, seed - 1])
    if kind in ("Ternary", "ReduceScatterQuantized") or (kind in ("Subnet", "D2ft") and
                                                          (variant >> 2) & 3):
        out += bytes([TERNARY_BLOCKS.index(block)])
    elif kind in ("LayoutEqual", "LayoutRegister"):
        out += bytes([block - 1])
    else:
        out += bytes([0])
    if bad is None:
        out += bytes([0])
    elif rank is None:
        out += bytes([3, BADS.index(bad)])
    else:
        out += bytes([2 | rank << 2, BADS.index(bad)])
    if kind == "Group":
        assert len(members) == 1 + variant % 3
        out += b"".join(members)
    return out


def program(nranks, steps, teardown=0, destroy_in_group=0, use_after_destroy=0):
    return bytes([nranks - 2 | teardown << 1 | destroy_in_group << 3 | use_after_destroy << 4]) + \
        b"".join(steps)


def api_sequence():
    mask = step("MaskRegister", count=100, seed=3)
    layout = step("LayoutRegister", block=4, seed=5)
    seeds = [
        # every dense collective, consistent, then with an op/root/kind that is the same everywhere
        program(2, [step("AllReduce", count=1001, dtype=7), step("Broadcast", root=1, dtype=9),
                    step("Reduce", op=2, root=1, dtype=2), step("AllGather", dtype=6),
                    step("ReduceScatter", count=5, op=4, dtype=8), step("SendRecv", dtype=1)]),
        program(3, [step("AllReduce", in_place=1, op=1, dtype=4), step("AllGather", in_place=1),
                    step("ReduceScatter", in_place=1, count=7), step("Broadcast", root=2, in_place=1),
                    step("AllReduce", count=0), step("SendRecv", count=4626)], teardown=1),
        # groups of collectives and send/recv
        program(3, [step("Group", variant=2, members=(step("AllReduce", dtype=3),
                                                      step("SendRecv", count=9),
                                                      step("Broadcast", root=1))),
                    step("Group", variant=1, members=(step("ReduceScatter"), step("AllGather")))]),
        # masks: strict, union with differing bits, masked and ternary all-reduce over them
        program(2, [mask, step("Masked", count=100, op=2, dtype=5), step("Query", variant=4),
                    step("Ternary", variant=1, block=7, count=100),
                    step("MaskRegister", count=50, policy=1, slot=1, bad="bitsOther", rank=1),
                    step("Masked", slot=1, count=50), step("Deregister", variant=0),
                    step("Deregister", variant=0)]),
        program(3, [step("Ternary", block=16, count=1001, op=1), step("Ternary", block=0, dtype=1),
                    step("Ternary", block=3, bad="seedOther", rank=2)], teardown=2),
        # layouts: equal subnets, random layouts, SDP and D2FT (exchanged and scheduled)
        program(3, [layout, step("Subnet", dtype=0), step("D2ft", variant=0, seed=9),
                    step("D2ft", variant=1, seed=10), step("Query", variant=5),
                    step("LayoutEqual", count=40, block=4, slot=1), step("D2ft", slot=1),
                    step("Deregister", variant=1, slot=1)]),
        # split and queries
        program(3, [step("Split", variant=0), step("Split", variant=1), step("Split", variant=6),
                    step("Query", variant=0), step("Query", variant=1), step("Query", variant=2),
                    step("Query", variant=3)]),
        # the same invalid argument on every rank: refused, the communicator still works
        program(2, [step("AllReduce", bad="dtypeInvalid"), step("AllReduce", bad="opInvalid"),
                    step("Broadcast", bad="rootInvalid"), step("AllGather", bad="countHuge"),
                    step("Reduce", bad="recvNull", root=1), step("AllReduce", bad="commNull"),
                    step("SendRecv", bad="sendNull"), step("Ternary", bad="paramsNull"),
                    step("Masked", bad="handleNull"), step("AllReduce")]),
        program(2, [mask, step("MaskRegister", bad="outNull"), step("LayoutEqual", bad="outNull",
                                                                    block=3),
                    step("Split", bad="rootInvalid"), step("Query", bad="outNull", variant=4),
                    step("Deregister", bad="handleNull"), step("AllReduce")]),
        # one rank differs: every rank fails with a message
        program(2, [step("AllReduce", bad="opOther", rank=1)]),
        program(3, [step("Broadcast", bad="rootOther", rank=0)]),
        program(2, [step("AllReduce", bad="kindOther", rank=0)]),
        program(3, [mask, step("MaskRegister", bad="bitsOther", rank=2, seed=4)]),
        program(2, [layout, step("D2ft", bad="bitsOther", rank=1)]),
        program(2, [step("AllGather", bad="dtypeInvalid", rank=1)]),
        # levels (variant bits 2-3): the all-reduce at L = 3, 7 (masked), 127, the quantized
        # reduce-scatter and all-gather (in place too), the subnet calls at L levels
        program(2, [mask, step("Ternary", variant=4, count=1001, block=16, op=1),
                    step("Ternary", variant=9, count=100, block=7),
                    step("Ternary", variant=12, dtype=1, count=300),
                    step("ReduceScatterQuantized", block=16),
                    step("ReduceScatterQuantized", variant=12, in_place=1, op=1, dtype=2),
                    step("AllGatherQuantized", count=300),
                    step("AllGatherQuantized", variant=4, in_place=1, dtype=1)]),
        program(3, [layout, step("Subnet", variant=4, block=16, dtype=0),
                    step("D2ft", variant=8, seed=9, block=7, dtype=1),
                    step("D2ft", variant=13, seed=10, block=0, dtype=2),
                    step("ReduceScatterQuantized", variant=8, count=1001)]),
        # masks on the subnet calls at L levels (policy 1: the slot's mask): SDP and D2FT
        # (exchanged, scheduled), a rank that passes none, a mask of another count
        program(3, [step("LayoutEqual", count=100, block=4), step("MaskRegister", count=100, seed=3),
                    step("Subnet", variant=4, policy=1, block=16, dtype=0),
                    step("D2ft", variant=8, policy=1, seed=9, block=7, dtype=1),
                    step("D2ft", variant=13, policy=1, seed=10, dtype=2),
                    step("Subnet", variant=12, policy=1, bad="policyOther", rank=1),
                    step("MaskRegister", count=50, slot=1, seed=4),
                    step("LayoutEqual", count=40, block=3, slot=1),
                    step("Subnet", variant=8, policy=1, slot=1)]),
        # levels or bits that differ on one rank, or are out of range on every rank
        program(2, [step("Ternary", variant=4, bad="rootOther", rank=1),
                    step("ReduceScatterQuantized", bad="rootInvalid"),
                    step("AllGatherQuantized", bad="rootOther", rank=0),
                    step("AllGatherQuantized", bad="rootInvalid"),
                    step("ReduceScatterQuantized", bad="count0", rank=1),
                    step("Ternary", variant=8)]),
        # top-k at every fraction (in place, avg, bfloat16), then a fraction that differs
        # on one rank and one out of range on every rank
        program(3, [step("TopK", count=1001), step("TopK", variant=4, in_place=1, op=1),
                    step("TopK", variant=8, dtype=2, count=300), step("TopK", variant=12),
                    step("TopK", bad="rootInvalid"), step("TopK", variant=4),
                    step("TopK", variant=8, bad="rootOther", rank=1)]),
        program(3, [layout, step("Subnet", variant=8, bad="rootOther", rank=2),
                    step("D2ft", variant=4, bad="rootInvalid"), step("Subnet", variant=4, dtype=3)]),
    ]
    write("api_sequence", seeds)
    # Reproducers of the bugs of issue 22 the fuzzer found (all fixed): regression inputs.
    known = [
        ("zero_count", program(3, [step("AllReduce", bad="count0", rank=0), step("AllReduce")])),
        ("zero_count", program(2, [step("Broadcast", root=1, bad="count0", rank=0),
                                   step("Broadcast", root=1)])),
        ("zero_count", program(2, [mask, step("Ternary", count=100, variant=1, bad="count0")])),
        ("overlap", program(2, [step("AllReduce", count=1024, bad="overlap")])),
        ("destroy_in_group", program(2, [step("AllReduce")], destroy_in_group=1)),
        ("huge_sizes", program(2, [step("Ternary", block=7, bad="blockHuge")])),
        ("huge_sizes", program(2, [step("MaskRegister", bad="countHuge")])),
        ("stale_handle", program(2, [step("AllReduce")], use_after_destroy=1)),
        ("mixed_policy", program(3, [step("MaskRegister", bad="policyOther", rank=2),
                                     step("Masked")])),
        ("messages", program(2, [step("Query", variant=0, bad="outNull")])),
        ("group_remnant", program(2, [step("SendRecv", bad="recvNull"), step("SendRecv", seed=2)])),
        # a failed all-reduce of rendezvous size leaked its sends' completion records (LSan)
        ("request_leak", program(3, [step("AllReduce", count=4700, bad="opOther", rank=0)])),
        ("subnet_enum", program(2, [layout, step("D2ft", variant=2, dtype=0, bad="dtypeInvalid",
                                                 seed=2)])),
    ]
    write("api_sequence", known, folder="known")


if __name__ == "__main__":
    main()
    api_sequence()
