"""Every live rate formula on hand-made counters: stage counts, realized and processed rates
over the windows packets flowed in, the platform's drop semantics, the generator-limited rule,
verdicts, certified rates and the ceiling per scenario."""

from __future__ import annotations

import pytest

from paclo.perf import live

S = 1_000_000_000  # ns per second


def _run(packets, sent=1000, *, received=2000, dropped=0, if_dropped=0, enqueued=None, q_dropped=0, errors=(),
         source="internal_observed", first=0, last=S, target=1000, realized=1000.0, platform="linux", cpu=None,
         generator=True, stats=True):
    enqueued = packets if enqueued is None else enqueued
    run = {
        "packets": packets,
        "capture_stats": {"received": received, "dropped": dropped, "interface_dropped": if_dropped} if stats else None,
        "queue_stats": {"mode": "blocking", "enqueued": enqueued, "dropped": q_dropped},
        "capture_errors": list(errors),
        "first_ts_ns": first,
        "last_ts_ns": last,
        "capture_cpu_ns": cpu,
    }
    report = {"sent": sent, "realized_pps": realized} if generator and source == "internal_observed" else None
    return live.derive(run, sent=sent, sent_source=source, target_pps=target, source="loopback", engine="queue",
                       generator=report, platform=platform)


def test_stage_counts_add_up():
    run = _run(990, sent=1000, received=2000, dropped=10, enqueued=995, q_dropped=5)
    assert run["stage_counts"] == {"sent": 1000, "capture_received": 2000, "capture_delivered": 1000,
                                   "kernel_dropped": 10, "interface_dropped": 0, "queue_enqueued": 995,
                                   "queue_dropped": 5, "consumer_processed": 990, "consumer_gap": 5, "send_loss": 10}
    assert run["processed_vs_sent_rate"] == 0.99
    assert run["send_loss_rate"] == 0.01
    assert run["queue_drop_rate"] == pytest.approx(5 / 1000)
    assert run["consumer_gap_rate"] == pytest.approx(5 / 995)


def test_window_rate_counts_intervals():
    # 200,001 packets evenly 5 us apart span exactly 1 s: 200,000 pps
    assert live.window_rate(200_001, 0, S) == 200_000.0
    assert live.window_rate(1, 0, S) is None
    assert live.window_rate(10, 5, 5) is None
    assert live.window_rate(10, None, S) is None


def test_processed_rate_uses_the_time_packets_flowed():
    # 1,001 packets over 0.5 s of a 2 s run: 2,000 pps, not 1,001 / 2 s
    run = _run(1001, sent=1001, first=3 * S, last=3 * S + S // 2)
    assert run["sustained_processed_pps"] == 2000.0
    assert run["capture_window_ns"] == S // 2
    assert _run(1, sent=1)["sustained_processed_pps"] is None


def test_loopback_realized_rate_comes_from_the_generator():
    run = _run(1000, realized=987.5)
    assert run["realized_send_pps"] == 987.5 and run["realized_send_source"] == "generator"


def test_external_realized_rate_from_expected_and_the_capture_window():
    # 15,000 expected over a capture window of 59.996 s (first to last packet)
    run = _run(15_000, sent=15_000, source="external_expected", first=S, last=S + 59_996_000_000, target=250)
    assert run["realized_send_pps"] == pytest.approx(14_999 / 59.996)
    assert run["realized_send_source"] == "capture_window"
    # with the generator's report, the report wins
    run = {"packets": 10, "capture_stats": None, "queue_stats": {"enqueued": 10, "dropped": 0}, "capture_errors": [],
           "first_ts_ns": 0, "last_ts_ns": S}
    live.derive(run, sent=10, sent_source="external_expected", target_pps=10, source="external", engine="direct",
                generator={"sent": 10, "realized_pps": 10.01})
    assert run["realized_send_pps"] == 10.01 and run["realized_send_source"] == "generator"
    # without a count nothing is known
    run = _run(500, sent=0, source="unavailable")
    assert run["realized_send_pps"] is None and run["generator_limited"] is None


def test_linux_drop_rate_counts_drops_inside_received():
    # Measured on lo (C libpcap, a stopped reader): 20,000 sent, ps_recv 40,000 (both directions),
    # ps_drop 39,906, 47 delivered. The drops are part of ps_recv: the true rate is 99.8%.
    run = _run(47, sent=20_000, received=40_000, dropped=39_906, platform="linux")
    assert run["kernel_drop_rate"] == pytest.approx(39_906 / 40_000)
    # the reference's dropped / (received + dropped) would report about half that
    assert run["kernel_drop_rate"] > 1.9 * (39_906 / 79_906)
    assert _run(47, sent=20_000, received=40_000, dropped=39_906, platform="darwin")["kernel_drop_rate"] == \
        pytest.approx(39_906 / 40_000)
    assert _run(47, sent=20_000, received=40_000, dropped=39_906, platform="win32")["kernel_drop_rate"] == \
        pytest.approx(39_906 / 79_906)
    assert _run(0, sent=0, received=0, dropped=0)["kernel_drop_rate"] == 0.0


def test_interface_drops_are_outside_received():
    run = _run(1000, received=1990, if_dropped=10)
    assert run["interface_drop_rate"] == pytest.approx(10 / 2000)


def test_unavailable_counters_are_none():
    run = _run(1000, stats=False)
    assert run["kernel_drop_rate"] is None and run["interface_drop_rate"] is None
    assert run["cpu_ns_per_packet"] is None


def test_cpu_per_packet():
    assert _run(1000, cpu=450_000)["cpu_ns_per_packet"] == 450.0


def test_generator_limited_below_95_percent():
    assert live.generator_limited(500_000, 150_665.0) is True
    assert live.generator_limited(500_000, 474_999.0) is True
    assert live.generator_limited(500_000, 475_000.0) is False
    assert live.generator_limited(500_000, None) is None
    assert live.generator_limited(0, 10.0) is None
    assert _run(1000, target=500_000, realized=150_665.0)["generator_limited"] is True


def test_the_sustainability_rule_is_one_per_mille():
    assert live.run_passes(_run(1000, sent=1000))
    assert live.run_passes(_run(999, sent=1000, enqueued=999))        # 0.1% loss passes
    assert not live.run_passes(_run(998, sent=1000, enqueued=998))    # 0.2% fails
    assert not live.run_passes(_run(1000, sent=1000, errors=["CaptureError: x"]))
    assert not live.run_passes(_run(1000, sent=0, source="unavailable"))
    assert not live.run_passes(_run(1000, sent=1000, enqueued=1000, q_dropped=5))
    assert not live.run_passes(_run(1000, sent=1000, received=2000, dropped=3))  # 0.15% kernel drops


def test_a_limited_run_certifies_only_what_was_offered():
    # the example: a generator that reached 150,665 of a 500,000 target, nothing lost
    runs = [_run(150_665, sent=150_665, target=500_000, realized=150_665.0)]
    sus = live.sustainability(runs)
    assert sus["all_runs_pass"] and sus["generator_limited"]
    assert sus["verdict"] == "limited" and sus["certified_pps"] == 150_665.0


def test_a_passing_run_certifies_at_most_its_target():
    sus = live.sustainability([_run(1000, realized=1000.4), _run(1000, realized=999.0), _run(1000, realized=998.0)])
    assert sus["verdict"] == "pass" and sus["certified_pps"] == 999.0  # median of min(target, realized)
    assert live.offered_pps({"realized_send_pps": 1000.4, "target_pps": 1000}) == 1000.0


def test_a_failing_result_certifies_nothing():
    sus = live.sustainability([_run(1000), _run(990, enqueued=990)])
    assert sus == {"drop_threshold": 0.001, "end_to_end": True, "passing_runs": 1, "total_runs": 2,
                   "all_runs_pass": False, "max_passing_processed_pps": 999.0, "generator_limited": False,
                   "certified_pps": None, "verdict": "fail"}


def _result(scenario, target, realized, ok=True, limited=False):
    return {"scenario": scenario, "config": {"target_pps": target, "source": "loopback"},
            "summary": {"sustained_processed_pps": {"median": realized}, "realized_send_pps": {"median": realized},
                        "cpu_ns_per_packet": {"median": 500.0}},
            "sustainability": {"all_runs_pass": ok, "generator_limited": limited,
                               "certified_pps": min(target, realized) if ok else None,
                               "verdict": "fail" if not ok else ("limited" if limited else "pass")}}


def test_max_sustainable_reports_realized_processed_and_certified():
    best = live.max_sustainable_by_scenario([
        _result("live-raw", 10_000, 10_000.0),
        _result("live-raw", 50_000, 49_990.0),
        _result("live-raw", 500_000, 150_665.0, limited=True),
        _result("live-raw", 1_000_000, 160_000.0, ok=False),
        _result("live-full", 10_000, 9_000.0, ok=False),
    ])
    assert best == {"live-raw": {"target_pps": 500_000, "realized_send_pps": 150_665.0, "processed_pps": 150_665.0,
                                 "certified_pps": 150_665.0, "generator_limited": True, "verdict": "limited",
                                 "cpu_ns_per_packet": 500.0, "source": "loopback", "upper_bound_pps": 160_000.0}}
    # nothing failed above 50k for this scenario: its ceiling is only a floor
    best = live.max_sustainable_by_scenario([_result("live-full", 50_000, 49_990.0), _result("live-full", 10_000, 10_000.0)])
    assert best["live-full"]["certified_pps"] == 49_990.0 and best["live-full"]["upper_bound_pps"] is None


def test_validation_requires_enqueued_equal_processed():
    assert live.validate_runs([_run(1000)]) == []
    assert live.validate_runs([_run(990, enqueued=1000)]) == ["run 1: queue enqueued 1000 != consumer processed 990"]


def test_senders_scale_with_the_rate_up_to_the_cpus():
    assert [live.senders_for(r, "loopback", 2) for r in (10_000, 400_000, 400_001, 1_000_000, 5_000_000)] == [1, 1, 2, 2, 2]
    assert live.senders_for(5_000_000, "loopback", 8) == 8
    assert live.senders_for(1_000_000, "external", 2) == 1


def test_every_paclo_scenario_has_a_c_peer_with_its_ring():
    assert live.c_peer_for("live-sync-raw") == "peer-c-libpcap-live-immediate"
    assert live.c_peer_for("live-sync-raw-buffered") == "peer-c-libpcap-live"
    for name, spec in live.SCENARIOS.items():
        peer = live.SCENARIOS[live.c_peer_for(name)]
        assert bool(peer["immediate"]) == bool(spec["immediate"]), name
    assert len(live.SCENARIOS) == 16
