"""workbench/vm/shard_plan.py: the plan split into VMs run side by side."""
import shard_plan

PLAN = ["net:a.py 300", "drivers/net:b.py 60 igb", "net:c.py 100",
        "drivers/net:d.py 200 virtio", "drivers/net:b.py 60 virtio", "drivers/net:e.py 90 igb"]


def test_a_nic_stays_in_one_shard_and_the_loads_balance():
    first, second = shard_plan.shard(PLAN, 2)
    assert first == ["net:a.py 300", "net:c.py 100"]
    assert second == ["drivers/net:b.py 60 igb", "drivers/net:d.py 200 virtio",
                      "drivers/net:b.py 60 virtio", "drivers/net:e.py 90 igb"]


def test_one_shard_is_the_plan_and_extra_shards_stay_empty():
    assert shard_plan.shard(PLAN, 1) == [PLAN]
    assert shard_plan.shard(PLAN[:1], 3) == [PLAN[:1], [], []]
