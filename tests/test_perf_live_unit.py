"""Live mode pieces that need no capture device: the scenario matrix, each scenario's config,
the live options and the C peer's command line."""

from __future__ import annotations

import pytest

from paclo.perf import cli, config, live, live_runner, live_worker


def test_scenario_config_follows_the_matrix():
    opts = cli.parse_args(["--mode", "live", "--port", "40000", "--queue-cap", "64"])
    raw = live.scenario_config("live-raw", opts, 10_000, 2)
    assert (raw["engine"], raw["buffer_size"], raw["immediate"], raw["queue_mode"]) == ("queue", None, None, "blocking")
    assert raw["filter"] == "udp dst port 40000" and raw["queue_cap"] == 64 and raw["sink"] == "hold"
    sync = live.scenario_config("live-sync-full", opts, 10_000, 2)
    assert (sync["engine"], sync["decode"], sync["buffer_size"], sync["immediate"], sync["queue_mode"]) == (
        "direct", "full", 16 * 1024 * 1024, True, "direct")
    twin = live.scenario_config("live-sync-raw-buffered", opts, 10_000, 2)
    assert (twin["engine"], twin["immediate"]) == ("direct", False)
    peer = live.scenario_config("peer-c-libpcap-live-immediate", opts, 10_000, 2)
    assert (peer["engine"], peer["immediate"], peer["queue_mode"]) == ("c-libpcap", True, "direct")
    drop = live.scenario_config("live-dropping-raw", opts, 1_000_000, 2)
    assert drop["queue_mode"] == "dropping" and drop["senders"] == 2
    forced = live.scenario_config("live-dropping-raw", cli.parse_args(["--queue-mode", "blocking"]), 1, 2)
    assert forced["queue_mode"] == "blocking"
    assert list(config.LIVE_SCENARIOS) == list(live.SCENARIOS)


def test_external_runs_filter_on_the_port_by_default():
    opts = cli.parse_args(["--mode", "live", "--source", "external", "--port", "41000"])
    cfg = live.scenario_config("live-sync-raw", opts, 0, 2)
    assert cfg["filter"] == "udp dst port 41000" and cfg["senders"] == 1
    opts = cli.parse_args(["--mode", "live", "--source", "external", "--filter", "udp"])
    assert live.scenario_config("live-sync-raw", opts, 0, 2)["filter"] == "udp"


def test_live_generator_options():
    opts = cli.parse_args(["--mode", "live", "--senders", "3", "--batch", "16", "--generator-cpus", "1",
                           "--sink", "drain"])
    cfg = live.scenario_config("live-raw", opts, 10_000, 2)
    assert (cfg["senders"], cfg["batch"], cfg["generator_cpus"], cfg["sink"]) == (3, 16, [1], "drain")
    for argv, message in [
        (["--sink", "read"], "sink must be hold, drain, or none"),
        (["--batch", "2000"], "batch must be between 1 and 1024"),
        (["--generator-cpus", "a"], "generator-cpus must be a comma list of CPU numbers"),
        (["--generator-report", "r.json"], "generator-report requires source=external"),
        (["--source", "external", "--generator-report", "r.json"], "generator-report requires expected-packets"),
    ]:
        with pytest.raises(cli.UsageError, match=message):
            cli.parse_args(["--mode", "live", *argv])


def test_live_scenarios_default_to_every_one_and_peers_follow_the_ring():
    opts = cli.parse_args(["--mode", "live"])
    assert live_runner.live_scenarios(opts) == list(live.SCENARIOS)
    opts = cli.parse_args(["--mode", "live", "--scenarios", "live-sync-raw,live-sync-raw-buffered"])
    assert live_runner.live_scenarios(opts) == ["live-sync-raw", "live-sync-raw-buffered"]
    opts = cli.parse_args(["--mode", "live", "--scenarios", "live-sync-raw", "--peers"])
    assert live_runner.live_scenarios(opts) == ["live-sync-raw", "peer-c-libpcap-live-immediate"]
    stress = cli.parse_args(["--mode", "live", "--profile", "stress"])
    assert "peer-c-libpcap-live-immediate" in live_runner.live_scenarios(stress)


def test_loopback_runs_send_rate_times_duration_within_a_time_cap():
    cfg = {"target_pps": 250_000, "duration_ms": 15_000, "source": "loopback"}
    assert live_worker.loopback_packets(cfg) == 3_750_000
    assert live_worker.send_cap_ms(15_000) == 18_750
    assert live_worker.send_cap_ms(2_000) == 3_000
    assert live_worker.capture_cap_s(cfg) == 20.75
    assert live_worker.capture_cap_s({**cfg, "source": "external"}) == 15.0


def test_c_peer_gets_the_scenarios_device_options():
    opts = cli.parse_args(["--mode", "live", "--port", "40001", "--snaplen", "1500"])
    cfg = live.scenario_config("peer-c-libpcap-live-immediate", opts, 10_000, 2)
    cfg["binary"] = "/bin/peer"
    cmd = live_worker.c_peer_command(cfg, "ready.signal")
    assert cmd[0] == "/bin/peer"
    args = dict(zip(cmd[1::2], cmd[2::2], strict=True))
    assert args == {"--device": "lo", "--snaplen": "1500", "--promisc": "1", "--timeout-ms": "10",
                    "--duration-ms": "5000", "--idle-ms": "500", "--ready-file": "ready.signal",
                    "--filter": "udp dst port 40001", "--buffer-size": str(16 << 20), "--immediate": "1"}
    defaults = live.scenario_config("live-raw", opts, 10_000, 2)
    defaults["binary"] = "/bin/peer"
    assert "--buffer-size" not in live_worker.c_peer_command(defaults, "r")


def test_ring_labels():
    assert live_runner.ring_label({"version": "TPACKET_V3", "block_count": 64, "block_size": 262144}) == "V3 64x256K"
    assert live_runner.ring_label({"version": "TPACKET_V2", "frame_count": 7885, "frame_size": 2128}) == "V2 7885 slots"
    assert live_runner.ring_label(None) == "-"


def test_each_capture_scenario_has_its_reduce_yardstick():
    assert live.reduce_peer_for("live-managed-raw") == "live-sync-raw"
    assert live.reduce_peer_for("live-raw-immediate") == "live-sync-raw"
    assert live.reduce_peer_for("live-managed-raw-buffered") == "live-sync-raw-buffered"
    assert live.reduce_peer_for("live-managed-full") == "live-sync-full"
    assert live.reduce_peer_for("live-raw") is None  # no reduce scenario with libpcap's default ring
    assert live.reduce_peer_for("live-sync-raw") is None
    assert live.reduce_peer_for("peer-c-libpcap-live") is None
    assert live.reduce_peer_for("live-managed-fanout-dual") is None


def _live_result(scenario: str, target: int, cpu_ns: float | None) -> dict:
    summary = {} if cpu_ns is None else {"cpu_ns_per_packet": {"median": cpu_ns}}
    return {"scenario": scenario, "config": {"target_pps": target}, "runs": [{"ring": None}], "summary": summary,
            "sustainability": {"verdict": "pass", "passing_runs": 1, "total_runs": 1}}


def test_live_table_shows_capture_cpu_as_a_multiple_of_reduce():
    results = [
        _live_result("live-sync-raw", 1000, 400.0),
        _live_result("live-managed-raw", 1000, 520.0),
        _live_result("peer-c-libpcap-live-immediate", 1000, 100.0),
        _live_result("live-managed-raw", 2000, 600.0),  # no reduce run at this target
        _live_result("live-managed-raw-buffered", 1000, 300.0),  # its yardstick (buffered) did not run
    ]
    lines = live_runner.live_table(results).splitlines()
    head = lines[0].split()
    assert "reduce" in head and head.index("reduce") == head.index("C") + 3  # "x C CPU", "x reduce CPU"

    def cells(i: int) -> list[str]:
        return lines[i].split()

    assert cells(2)[-4:-2] == ["4.0", "-"]  # reduce itself: x C CPU only
    assert cells(3)[-4:-2] == ["5.2", "1.30"]  # 520 / 400
    assert cells(4)[-4:-2] == ["1.0", "-"]
    assert cells(5)[-4:-2] == ["-", "-"]
    assert cells(6)[-4:-2] == ["-", "-"]
