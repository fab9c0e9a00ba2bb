#!/usr/bin/env python3
"""Cross-validate xrc against ns-3.44 on a wired dumbbell.

One bulk TCP flow through a 20 Mbit/s bottleneck with a 100-packet drop-tail
queue and a 40 ms base RTT, in ns-3.44 (PyPI ``ns3==3.44.post0``, cppyy
bindings) and in xrc (scenarios/validation/dumbbell-20mbit-40ms.toml), for
each congestion control both implement. Prints a side-by-side table:

* goodput, Mbit/s: bytes delivered in order to the receiving application in
  [--steady-from, --duration) s (default 5-30 s, after slow start), both
  sides binned in 100 ms;
* mean and p95 RTT, ms: the sender's RTT samples taken in the same interval,
  one per ACK that acknowledges new data (ns-3: the values of the ``LastRTT``
  trace source of TcpSocketBase, see ``SenderRx`` below; xrc:
  ``rtt.parquet``);
* retransmitted segments over the whole run (ns-3: the ``Retransmission``
  trace source; xrc: ``retransmits.parquet``);

and the relative differences (xrc vs ns-3) with the targets: goodput within
3 %, mean RTT within 10 %. docs/validation.md has the measured tables and
the reason for every gap.

By default ns-3 runs as released. ``--ns3-fix`` works around three ns-3.44
defects found in this comparison (docs/validation.md), one by one or all:

* ``prr``: TcpPrrRecovery with the two post-3.44 upstream fixes (issues
  #1350, #1351);
* ``cc-rtt``: CUBIC and Vegas get each ACK's RTT sample, not the smoothed
  RTT ns-3.43+ passes to ``PktsAcked``;
* ``rate-sample``: BBR's delivery-rate samples take the ACK interval up to
  the current ACK, as Linux ``tcp_rate_gen``.

``--ns3-no-timestamps`` gives ns-3 RTT samples at ns instead of 1 ms
resolution (its packets are then 12 bytes shorter than xrc's).

Not part of the test suite (it needs ns-3 and takes a minute or two). ns-3
is installed on first use into ``.venv-ns3`` at the repository root
(``python -m venv`` + ``pip install ns3==3.44.post0``) unless
``--ns3-python`` names a Python that already has it. xrc runs from the
repository's ``.venv`` (``make setup``) unless ``--xrc-python`` says
otherwise. Each simulation runs in its own process, one at a time.

Usage:
  scripts/crossval_ns3.py                              # cubic, newreno, bbr, vegas; 30 s
  scripts/crossval_ns3.py --schemes cubic,vegas --duration 60 --json out.json
  scripts/crossval_ns3.py --ns3-fix all --ns3-no-timestamps
  scripts/crossval_ns3.py --ns3-python /path/to/venv/bin/python

Exit status: 0 when every compared scheme meets both targets, 1 when one
misses, 2 for bad arguments or a failed simulation.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "scenarios" / "validation" / "dumbbell-20mbit-40ms.toml"
NS3_VENV = REPO / ".venv-ns3"
NS3_PIN = "ns3==3.44.post0"
ALL_SCHEMES = ("cubic", "newreno", "bbr", "vegas")
NS3_TYPES = {"cubic": "ns3::TcpCubic", "newreno": "ns3::TcpNewReno", "bbr": "ns3::TcpBbr", "vegas": "ns3::TcpVegas"}
NS3_FIXES = ("prr", "cc-rtt", "rate-sample")
GOODPUT_TOL = 0.03
RTT_TOL = 0.10

# The dumbbell, as in the scenario file (the xrc worker checks they agree).
RATE_MBPS = 20.0
ONE_WAY_MS = 20.0
BUFFER_PACKETS = 100
MSS = 1448
BIN_S = 0.1


# ---------------------------------------------------------------- statistics
# Plain Python, so both workers (and the ns-3 venv, which has no NumPy) use
# the same code.

def percentile(sorted_xs: list[float], q: float) -> float | None:
    """NumPy's default (linear) percentile of an already sorted list."""
    if not sorted_xs:
        return None
    pos = (len(sorted_xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def metrics(*, bins: list[int], rtt_t: list[float], rtt_ms: list[float], retx_t: list[float],
            t0: float, t1: float, extra: dict) -> dict:
    """The compared numbers from raw series: ``bins`` are bytes delivered per
    100 ms bin from t = 0, ``rtt_*`` the sender's samples, ``retx_t`` the
    times of retransmissions."""
    i0, i1 = round(t0 / BIN_S), round(t1 / BIN_S)
    rtts = sorted(r for t, r in zip(rtt_t, rtt_ms) if t0 <= t < t1)
    return {
        "goodput_mbps": sum(bins[i0:i1]) * 8 / (t1 - t0) / 1e6,
        "goodput_whole_mbps": sum(bins[:i1]) * 8 / t1 / 1e6,
        "rtt_mean_ms": mean(rtts),
        "rtt_p50_ms": percentile(rtts, 50),
        "rtt_p95_ms": percentile(rtts, 95),
        "rtt_min_ms": rtts[0] if rtts else None,
        "rtt_samples": len(rtts),
        "retransmits": len(retx_t),
        "retransmits_in_window": sum(1 for t in retx_t if t0 <= t < t1),
        "window_s": [t0, t1],
        **extra,
    }


# ---------------------------------------------------------------- ns-3 worker

NS3_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/applications-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include <deque>
#include <vector>

namespace xrcval {
using namespace ns3;

// ------------------------------------------------------------ recording
struct Rec {
    std::vector<uint64_t> bins;          // bytes delivered to the sink per 100 ms
    std::vector<double> rttT, rttMs;     // every RTT sample the sender takes (SenderRx)
    std::vector<double> lastT, lastMs;   // the LastRTT trace source (fires on changes only)
    std::vector<double> srttT, srttMs;   // the "RTT" trace source: in ns-3.44 the smoothed RTT
    std::vector<double> retxT;           // the Retransmission trace source
    uint64_t queueDrops = 0;             // bottleneck: the device queue, and the traffic-control
    uint64_t tcDrops = 0;                //   layer when the (stopped) device queue is full
    uint32_t maxQueue = 0;
    uint32_t highAck = 0;
    bool anyAck = false;
    double binS = 0.1;
};
static Rec g;

// Without timestamps, segments' send times (from the Tx trace) for SenderRx.
struct Sent { uint32_t end; double t; bool retx; };
static std::deque<Sent> sent;

void Reset(double binS) { g = Rec(); g.binS = binS; sent.clear(); }

static void SinkRx(Ptr<const Packet> p, const Address&)
{
    size_t i = (size_t)(Simulator::Now().GetSeconds() / g.binS);
    if (g.bins.size() <= i) g.bins.resize(i + 1, 0);
    g.bins[i] += p->GetSize();
}
static void SenderTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    if (p->GetSize() == 0) return;
    uint32_t seq = h.GetSequenceNumber().GetValue(), end = seq + p->GetSize();
    if (sent.empty() || (int32_t)(seq - sent.back().end) >= 0)
    {
        sent.push_back({end, Simulator::Now().GetSeconds(), false});
        return;
    }
    for (auto& s : sent)
        if ((int32_t)(s.end - seq) > 0) { s.retx = true; break; }
}
// The sender's RTT samples as TcpSocketBase::EstimateRtt takes them: one
// per ACK that acknowledges new data. With timestamps (ns-3's default):
// now - TSecr, both on the TS clock of whole milliseconds
// (TcpOptionTS::ElapsedTimeFromTsValue). Without: now - send time of the
// earliest segment the ACK covers, unless retransmitted (Karn), as the
// estimator does. The LastRTT trace source carries the same values with
// timestamps, but being a TracedValue it fires only when a sample differs
// from the previous one, so runs of equal samples would be under-counted;
// it is recorded as a cross-check.
static void SenderRx(Ptr<const Packet>, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    if (!(h.GetFlags() & TcpHeader::ACK)) return;
    uint32_t ack = h.GetAckNumber().GetValue();
    if (g.anyAck && (int32_t)(ack - g.highAck) <= 0) return;
    g.anyAck = true;
    g.highAck = ack;
    double now = Simulator::Now().GetSeconds();
    if (!h.HasOption(TcpOption::TS))
    {
        if (!sent.empty() && (int32_t)(ack - sent.front().end) >= 0)
        {
            if (!sent.front().retx)
            {
                g.rttT.push_back(now);
                g.rttMs.push_back((now - sent.front().t) * 1e3);
            }
            while (!sent.empty() && (int32_t)(ack - sent.front().end) >= 0) sent.pop_front();
        }
        return;
    }
    uint32_t echo = DynamicCast<const TcpOptionTS>(h.GetOption(TcpOption::TS))->GetEcho();
    uint32_t now32 = (uint32_t)((uint64_t)Simulator::Now().GetMilliSeconds() & 0xFFFFFFFF);
    if (now32 <= echo) return;
    g.rttT.push_back(now);
    g.rttMs.push_back((double)(now32 - echo));
}
static void LastRtt(Time, Time v)
{
    g.lastT.push_back(Simulator::Now().GetSeconds());
    g.lastMs.push_back(v.GetSeconds() * 1e3);
}
static void Srtt(Time, Time v)
{
    g.srttT.push_back(Simulator::Now().GetSeconds());
    g.srttMs.push_back(v.GetSeconds() * 1e3);
}
static void Retx(Ptr<const Packet>, const TcpHeader&, const Address&, const Address&, Ptr<const TcpSocketBase>)
{
    g.retxT.push_back(Simulator::Now().GetSeconds());
}
static void QDrop(Ptr<const Packet>) { g.queueDrops++; }
static void TcDrop(Ptr<const Packet>) { g.tcDrops++; }
static void QLen(uint32_t, uint32_t v) { if (v > g.maxQueue) g.maxQueue = v; }

void ConnectSink(Ptr<Application> app)
{
    app->TraceConnectWithoutContext("Rx", MakeCallback(&SinkRx));
}
void ConnectQueue(Ptr<NetDevice> dev)
{
    Ptr<Queue<Packet>> q = DynamicCast<PointToPointNetDevice>(dev)->GetQueue();
    q->TraceConnectWithoutContext("Drop", MakeCallback(&QDrop));
    q->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&QLen));
    dev->GetNode()->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", MakeCallback(&TcDrop));
}
// BulkSend creates its socket when it starts: hook it just after.
static void ConnectSocket(Ptr<BulkSendApplication> app)
{
    Ptr<Socket> s = app->GetSocket();
    s->TraceConnectWithoutContext("Tx", MakeCallback(&SenderTx));
    s->TraceConnectWithoutContext("Rx", MakeCallback(&SenderRx));
    s->TraceConnectWithoutContext("LastRTT", MakeCallback(&LastRtt));
    s->TraceConnectWithoutContext("RTT", MakeCallback(&Srtt));
    s->TraceConnectWithoutContext("Retransmission", MakeCallback(&Retx));
}
void ScheduleConnectSocket(Ptr<Application> app, double t)
{
    Simulator::Schedule(Seconds(t), &ConnectSocket, DynamicCast<BulkSendApplication>(app));
}
// The root queue disc on a device, if any (to show none is installed).
std::string QueueDiscOn(Ptr<NetDevice> dev)
{
    Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
    Ptr<QueueDisc> qd = tc ? tc->GetRootQueueDiscOnDevice(dev) : nullptr;
    return qd ? qd->GetInstanceTypeId().GetName() : std::string("none");
}

// ------------------------------------------------------------ --ns3-fix prr
// ns-3.44's TcpPrrRecovery with the two upstream fixes that came after 3.44
// (ns-3-dev 05c9099bb, issue #1350: with SACK, DeliveredData is the
// caller's SND.UNA advance plus newly SACKed bytes, with no extra SMSS per
// duplicate ACK; 6523c1aad, issue #1351: RecoverFS is the FlightSize
// SND.NXT - SND.UNA, not the RFC 6675 pipe). Otherwise the 3.44 code line
// for line (PRR-CRB, SSRB on a "safe" ACK, forced first retransmission).
// This comparison always negotiates SACK.
class PrrFixed : public TcpRecoveryOps
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::XrcvalPrrFixedRecovery")
                                .SetParent<TcpRecoveryOps>()
                                .SetGroupName("Internet")
                                .AddConstructor<PrrFixed>();
        return tid;
    }
    PrrFixed() = default;
    PrrFixed(const PrrFixed& o)
        : TcpRecoveryOps(o), m_prrDelivered(o.m_prrDelivered), m_prrOut(o.m_prrOut), m_recoverFs(o.m_recoverFs)
    {
    }
    std::string GetName() const override { return "XrcvalPrrFixedRecovery"; }
    void EnterRecovery(Ptr<TcpSocketState> tcb, uint32_t, uint32_t unAckDataCount, uint32_t deliveredBytes) override
    {
        m_prrOut = 0;
        m_prrDelivered = 0;
        m_recoverFs = std::max(unAckDataCount, tcb->m_segmentSize);
        DoRecovery(tcb, deliveredBytes, true);
    }
    void DoRecovery(Ptr<TcpSocketState> tcb, uint32_t deliveredBytes, bool) override
    {
        if (deliveredBytes == 0) return;
        m_prrDelivered += deliveredBytes;
        int64_t sendCount;
        if (tcb->m_bytesInFlight > tcb->m_ssThresh)
        {
            uint64_t d = (uint64_t)m_prrDelivered * tcb->m_ssThresh.Get();
            sendCount = (int64_t)((d + m_recoverFs - 1) / m_recoverFs) - (int64_t)m_prrOut;
        }
        else
        {
            int64_t limit = std::max<int64_t>((int64_t)m_prrDelivered - (int64_t)m_prrOut, deliveredBytes);
            if (tcb->m_isRetransDataAcked) limit += tcb->m_segmentSize;
            sendCount = std::min<int64_t>(limit, (int64_t)tcb->m_ssThresh.Get() - (int64_t)tcb->m_bytesInFlight.Get());
        }
        sendCount = std::max<int64_t>(sendCount, m_prrOut > 0 ? 0 : tcb->m_segmentSize);
        tcb->m_cWnd = (uint32_t)(tcb->m_bytesInFlight.Get() + sendCount);
        tcb->m_cWndInfl = tcb->m_cWnd;
    }
    void ExitRecovery(Ptr<TcpSocketState> tcb) override { tcb->m_cWndInfl = tcb->m_cWnd; }
    void UpdateBytesSent(uint32_t b) override { m_prrOut += b; }
    Ptr<TcpRecoveryOps> Fork() override { return CopyObject<PrrFixed>(this); }

  private:
    uint32_t m_prrDelivered = 0, m_prrOut = 0, m_recoverFs = 1;
};

// ------------------------------------------------------------ --ns3-fix cc-rtt
// Since ns-3.43 (3be702f76, issue #1043) TcpSocketBase::ProcessAck hands
// every congestion control the smoothed RTT (m_tcb->m_srtt) in PktsAcked;
// Linux's pkts_acked gets the ACK's own sample. These pass the sample
// (m_lastRtt, set by EstimateRtt for this very ACK) instead.
#define XRCVAL_SAMPLE_RTT(NAME, BASE)                                                          \
    class NAME : public BASE                                                                   \
    {                                                                                          \
      public:                                                                                  \
        static TypeId GetTypeId()                                                              \
        {                                                                                      \
            static TypeId tid = TypeId("ns3::Xrcval" #NAME)                                    \
                                    .SetParent<BASE>()                                         \
                                    .SetGroupName("Internet")                                  \
                                    .AddConstructor<NAME>();                                   \
            return tid;                                                                        \
        }                                                                                      \
        NAME() = default;                                                                      \
        NAME(const NAME& o) = default;                                                         \
        std::string GetName() const override { return std::string(#NAME); }                    \
        void PktsAcked(Ptr<TcpSocketState> tcb, uint32_t n, const Time& rtt) override          \
        {                                                                                      \
            Time s = tcb->m_lastRtt.Get();                                                     \
            BASE::PktsAcked(tcb, n, s.IsZero() ? rtt : s);                                     \
        }                                                                                      \
        Ptr<TcpCongestionOps> Fork() override { return CopyObject<NAME>(this); }               \
    };
XRCVAL_SAMPLE_RTT(TcpCubicSampleRtt, TcpCubic)
XRCVAL_SAMPLE_RTT(TcpVegasSampleRtt, TcpVegas)

// ------------------------------------------------------------ --ns3-fix rate-sample
// ns-3.44's TcpRateLinux keeps one TcpRateSample across ACKs and computes
// its ACK interval when the prior segment is chosen (SkbDelivered). When an
// ACK's segments carry the same delivery snapshot as the previous ACK's
// prior (sent between the same two ACKs), the prior is not replaced and the
// sample keeps the previous ACK's interval while counting this ACK's
// deliveries: the rate comes out one ACK's worth too high. Linux
// (tcp_rate_gen) measures ack_us = now - prior_mstamp on every ACK and BBR
// takes delivered / interval_us from the current sample; this does that.
class TcpBbrLinuxRate : public TcpBbr
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::XrcvalTcpBbrLinuxRate")
                                .SetParent<TcpBbr>()
                                .SetGroupName("Internet")
                                .AddConstructor<TcpBbrLinuxRate>();
        return tid;
    }
    TcpBbrLinuxRate() = default;
    TcpBbrLinuxRate(const TcpBbrLinuxRate& o) = default;
    std::string GetName() const override { return "TcpBbrLinuxRate"; }
    void CongControl(Ptr<TcpSocketState> tcb,
                     const TcpRateOps::TcpRateConnection& rc,
                     const TcpRateOps::TcpRateSample& rs) override
    {
        TcpRateOps::TcpRateSample s = rs;
        if (s.m_delivered > 0 && !s.m_interval.IsZero() && !s.m_priorTime.IsZero())
        {
            s.m_ackElapsed = Simulator::Now() - s.m_priorTime;
            s.m_interval = std::max(s.m_sendElapsed, s.m_ackElapsed);
            s.m_deliveryRate = DataRate(s.m_delivered * 8.0 / s.m_interval.GetSeconds());
        }
        TcpBbr::CongControl(tcb, rc, s);
    }
    Ptr<TcpCongestionOps> Fork() override { return CopyObject<TcpBbrLinuxRate>(this); }
};

std::string CcTypeName(std::string base, bool ccRtt, bool rateSample)
{
    if (ccRtt && base == "ns3::TcpCubic") return TcpCubicSampleRtt::GetTypeId().GetName();
    if (ccRtt && base == "ns3::TcpVegas") return TcpVegasSampleRtt::GetTypeId().GetName();
    if (rateSample && base == "ns3::TcpBbr") return TcpBbrLinuxRate::GetTypeId().GetName();
    return base; // NewReno ignores the RTT; BBR reads m_lastRtt itself
}
std::string RecoveryTypeName(bool prrFix)
{
    return prrFix ? PrrFixed::GetTypeId().GetName() : std::string("ns3::TcpPrrRecovery");
}
} // namespace xrcval
"""


def ns3_worker(scheme: str, duration: float, t0: float, out: Path, fixes: set[str], timestamps: bool) -> None:
    from ns import ns  # noqa: PLC0415 (only in the ns-3 interpreter)

    ns.cppyy.cppdef(NS3_CPP)
    X = ns.cppyy.gbl.xrcval
    X.Reset(BIN_S)
    cc_type = str(X.CcTypeName(NS3_TYPES[scheme], "cc-rtt" in fixes, "rate-sample" in fixes))
    rec_type = str(X.RecoveryTypeName("prr" in fixes))

    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(1)
    d = ns.Config.SetDefault
    d("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(cc_type)))
    d("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(ns.TypeId.LookupByName(rec_type)))
    d("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
    # Large buffers: the advertised window must never be the limit (xrc's is
    # unlimited); ns-3's default of 128 kB is less than BDP + buffer.
    d("ns3::TcpSocket::SndBufSize", ns.UintegerValue(8 << 20))
    d("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(8 << 20))
    # ns-3.44's defaults, stated so that a change of default shows up here:
    # IW 10, delayed ACK every 2 segments or after 200 ms, MinRto 1 s, SACK,
    # timestamps, PRR recovery, no pacing (BBR turns it on itself).
    d("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    d("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    d("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(200)))
    d("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(1)))
    d("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    d("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(timestamps))

    nodes = ns.NodeContainer()
    nodes.Create(3)  # 0 sender, 1 router, 2 receiver
    ns.InternetStackHelper().Install(nodes)

    # Access link: fast, never the bottleneck; its queues are large so a
    # burst from the sender is never dropped there (xrc's sender feeds the
    # bottleneck queue directly).
    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate("1Gbps")))
    access.SetChannelAttribute("Delay", ns.TimeValue(ns.MilliSeconds(1)))
    access.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize("10000p")))
    # Bottleneck: 20 Mbit/s; 1 + 19 ms = 20 ms one way, 40 ms base RTT.
    neck = ns.PointToPointHelper()
    neck.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(f"{RATE_MBPS:g}Mbps")))
    neck.SetChannelAttribute("Delay", ns.TimeValue(ns.MilliSeconds(ONE_WAY_MS - 1)))
    neck.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{BUFFER_PACKETS}p")))
    d_access = access.Install(nodes.Get(0), nodes.Get(1))
    d_neck = neck.Install(nodes.Get(1), nodes.Get(2))

    ip = ns.Ipv4AddressHelper()
    ip.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
    ip.Assign(d_access)
    ip.SetBase(ns.Ipv4Address("10.1.2.0"), ns.Ipv4Mask("255.255.255.0"))
    if_neck = ip.Assign(d_neck)
    # Ipv4AddressHelper::Assign installs the default root queue disc
    # (FqCoDel) on every device. Remove it: the bottleneck's only queue is
    # then the device's 100-packet DropTailQueue, holding the packets that
    # wait behind the one being serialized, as xrc's. (When it is full the
    # device queue is "stopped" and the traffic-control layer drops the
    # packet: the TcDrop trace.)
    tch = ns.TrafficControlHelper()
    tch.Uninstall(d_access)
    tch.Uninstall(d_neck)
    qdiscs = sorted({str(X.QueueDiscOn(c.Get(i))) for c in (d_access, d_neck) for i in range(2)})
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    port = 5000
    sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                               ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
    sink_apps = sink.Install(nodes.Get(2))
    bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(if_neck.GetAddress(1), port).ConvertTo())
    bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
    bulk.SetAttribute("SendSize", ns.UintegerValue(MSS))
    bulk_apps = bulk.Install(nodes.Get(0))
    sink_apps.Start(ns.Seconds(0.0))
    bulk_apps.Start(ns.Seconds(0.0))
    X.ConnectSink(sink_apps.Get(0))
    X.ConnectQueue(d_neck.Get(0))
    X.ScheduleConnectSocket(bulk_apps.Get(0), 1e-9)

    ns.Simulator.Stop(ns.Seconds(duration))
    w0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - w0
    ns.Simulator.Destroy()

    g = X.g
    bins = [int(b) for b in g.bins] + [0] * max(0, round(duration / BIN_S) - len(g.bins))
    rtt_ms = list(g.rttMs)
    last = list(g.lastMs)
    dedup = [v for i, v in enumerate(rtt_ms) if i == 0 or v != rtt_ms[i - 1]]
    res = metrics(
        bins=bins, rtt_t=list(g.rttT), rtt_ms=rtt_ms, retx_t=list(g.retxT), t0=t0, t1=duration,
        extra={
            "queue_drops": int(g.queueDrops) + int(g.tcDrops),
            "max_queue_packets": int(g.maxQueue),
            # The "RTT" trace source, which in ns-3.43+ is the smoothed RTT.
            "srtt_trace_mean_ms": mean([v for t, v in zip(g.srttT, g.srttMs) if t0 <= t < duration]),
            # With timestamps the samples, repeats dropped, must be exactly
            # the LastRTT trace. (Without, LastRTT times the latest segment
            # an ACK covers, the samples the earliest, as xrc's rtt.parquet.)
            "lastrtt_trace_matches": (dedup == last) if timestamps else None,
            "queue_discs": qdiscs,
            "recovery": rec_type,
            "congestion_ops": cc_type,
            "timestamps": timestamps,
            "wall_s": wall,
            "version": "ns-3.44 (" + NS3_PIN + ")",
        },
    )
    out.write_text(json.dumps(res))


# ---------------------------------------------------------------- xrc worker

def xrc_worker(scheme: str, duration: float, t0: float, out: Path, scenario: Path, run_dir: Path,
               keep: bool) -> None:
    import pyarrow.parquet as pq  # noqa: PLC0415 (the xrc interpreter has it)

    from xrc import _core  # noqa: PLC0415
    from xrc.runner import run_to_dir  # noqa: PLC0415
    from xrc.scenario import load  # noqa: PLC0415

    sc = load(str(scenario), overrides=[f"flows.0.cc={scheme}", f"duration_s={duration}"])
    r = sc.resolved
    inet = r["internet"]
    if (inet["rate_mbps"], inet["delay_ms"], inet["buffer_packets"], r["flows"][0]["tcp"]["mss"]) != (
            RATE_MBPS, ONE_WAY_MS, BUFFER_PACKETS, MSS):
        raise SystemExit(f"{scenario}: the dumbbell differs from the one this script builds in ns-3")
    if float(r["output"]["bin_ms"]) != BIN_S * 1e3 or not r["output"]["rtt_trace"]:
        raise SystemExit(f"{scenario}: needs output.bin_ms = 100 and output.rtt_trace = true")
    w0 = time.perf_counter()
    summary = run_to_dir(sc, str(run_dir), force=True, plots=False, progress=False,
                         argv=["crossval_ns3.py", scheme])
    wall = time.perf_counter() - w0
    tp = pq.read_table(run_dir / "flow_throughput.parquet").to_pydict()
    n = round(duration / BIN_S)
    bins = [0] * n
    for t, b in zip(tp["t"], tp["bytes"]):
        i = round(t / BIN_S)
        if i < n:
            bins[i] += int(b)
    rtt = pq.read_table(run_dir / "rtt.parquet").to_pydict()
    retx = pq.read_table(run_dir / "retransmits.parquet").to_pydict()
    drops = pq.read_table(run_dir / "drops.parquet").to_pydict()
    res = metrics(
        bins=bins, rtt_t=list(rtt["t"]), rtt_ms=list(rtt["rtt_ms"]), retx_t=list(retx["t"]), t0=t0, t1=duration,
        extra={
            "queue_drops": sum(1 for loc in drops["location"] if loc == 0),
            "summary_retransmits": summary["flows"][0]["retransmits"],
            "timeouts": summary["flows"][0]["timeouts"],
            "cc_params": r["flows"][0]["cc_params"],
            "run_dir": str(run_dir) if keep else None,
            "wall_s": wall,
            "version": f"xrc core {_core.version()}",
        },
    )
    out.write_text(json.dumps(res))


def xrc_schemes(py: str) -> list[str]:
    code = "import json, xrc._core as c; print(json.dumps(list(c.schemes())))"
    p = subprocess.run([py, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"cannot import xrc with {py}:\n{p.stderr.strip()}\n(run `make setup`, or pass --xrc-python)")
    return json.loads(p.stdout)


# ---------------------------------------------------------------- driver

def ensure_ns3(py: str | None, venv: Path) -> str:
    """A Python with ns-3.44's bindings: ``py`` if given, else the one in
    ``venv`` (created and filled on first use)."""
    if py:
        return py
    venv_py = venv / "bin" / "python"
    if venv_py.exists():
        ok = subprocess.run([str(venv_py), "-c", "import importlib.metadata as m; print(m.version('ns3'))"],
                            capture_output=True, text=True)
        if ok.returncode == 0 and ok.stdout.strip() == NS3_PIN.split("==")[1]:
            return str(venv_py)
    # The ns3 3.44.post0 wheels are built per CPython version (the project's
    # reference machine has 3.11): prefer 3.11.
    base = sys.executable if sys.version_info[:2] == (3, 11) else (shutil.which("python3.11") or sys.executable)
    print(f"installing {NS3_PIN} into {venv} with {base} (once; ~500 MB)...", file=sys.stderr, flush=True)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv_py), "-m", "pip", "install", "--quiet", NS3_PIN], check=True)
    return str(venv_py)


def run_worker(py: str, args: list[str], label: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="crossval-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [py, str(Path(__file__).resolve()), "--worker", *args, "--result", str(out)]
        # An empty working directory: the ns3 package looks for its shared
        # libraries under the current directory too (recursively), and
        # stops at a second copy of ns-3 (say, .venv-ns3 while running
        # --ns3-python from elsewhere).
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        if p.returncode != 0 or not out.exists():
            raise RuntimeError(f"{label} failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return json.loads(out.read_text())


def rel(a: float | None, b: float | None) -> float | None:
    """(a − b)/b: xrc relative to ns-3."""
    if a is None or b is None or b == 0:
        return None
    return (a - b) / b


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def table(rows: list[dict], t0: float, t1: float) -> str:
    head = (f"{'scheme':<8} | {'goodput Mbit/s':^23} | {'mean RTT ms':^23} | {'p95 RTT ms':^15} | "
            f"{'retransmits':^13} | targets")
    sub = (f"{'':<8} | {'ns-3':>6} {'xrc':>6} {'diff':>8} | {'ns-3':>6} {'xrc':>6} {'diff':>8} | "
           f"{'ns-3':>6} {'xrc':>6}  | {'ns-3':>6} {'xrc':>6} |")
    lines = [f"goodput and RTT over {t0:g}-{t1:g} s; retransmits over the whole run",
             head, sub, "-" * len(head)]
    for r in rows:
        n, x = r["ns3"], r["xrc"]
        dg, dr = r["goodput_diff"], r["rtt_mean_diff"]
        ok = "goodput " + ("ok" if r["goodput_ok"] else "MISS") + ", RTT " + ("ok" if r["rtt_ok"] else "MISS")
        lines.append(
            f"{r['scheme']:<8} | {fmt(n['goodput_mbps']):>6} {fmt(x['goodput_mbps']):>6} "
            f"{fmt(None if dg is None else dg * 100, '+.1f') + ' %':>8} | "
            f"{fmt(n['rtt_mean_ms'], '.1f'):>6} {fmt(x['rtt_mean_ms'], '.1f'):>6} "
            f"{fmt(None if dr is None else dr * 100, '+.1f') + ' %':>8} | "
            f"{fmt(n['rtt_p95_ms'], '.1f'):>6} {fmt(x['rtt_p95_ms'], '.1f'):>6}  | "
            f"{n['retransmits']:>6} {x['retransmits']:>6} | {ok}")
    return "\n".join(lines)


def parse_fixes(text: str) -> set[str]:
    items = {s.strip() for s in text.split(",") if s.strip()}
    if items == {"all"}:
        return set(NS3_FIXES)
    bad = items - set(NS3_FIXES)
    if bad:
        raise argparse.ArgumentTypeError(f"unknown fix(es) {sorted(bad)}; choose from {', '.join(NS3_FIXES)} or all")
    return items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schemes", default=",".join(ALL_SCHEMES),
                    help=f"comma-separated, from {', '.join(ALL_SCHEMES)} (default: all)")
    ap.add_argument("--duration", type=float, default=30.0, help="simulated seconds per run (default 30)")
    ap.add_argument("--steady-from", type=float, default=5.0,
                    help="goodput and RTT are taken from here to the end, s (default 5)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    ap.add_argument("--ns3-python", metavar="PATH",
                    help="a Python with ns3==3.44.post0 (default: the one in --ns3-venv, installed on first use)")
    ap.add_argument("--ns3-venv", metavar="DIR", default=str(NS3_VENV),
                    help="where to install ns-3 when --ns3-python is not given (default: %(default)s)")
    ap.add_argument("--ns3-fix", type=parse_fixes, default=set(), metavar="LIST",
                    help=f"work around ns-3.44 defects: comma-separated from {', '.join(NS3_FIXES)}, or all "
                         "(default: none, ns-3 as released)")
    ap.add_argument("--ns3-no-timestamps", action="store_true",
                    help="turn ns-3's TCP timestamps off, so its RTT samples have ns instead of 1 ms "
                         "resolution (its packets are then 12 bytes shorter: +0.7 %% goodput at capacity)")
    ap.add_argument("--xrc-python", metavar="PATH",
                    help="a Python with xrc installed (default: the repository's .venv, else this one)")
    ap.add_argument("--scenario", default=str(SCENARIO), help="the xrc scenario (default: %(default)s)")
    ap.add_argument("--keep", metavar="DIR", help="keep the xrc run directories under DIR")
    # Internal: run one simulation in this interpreter.
    ap.add_argument("--worker", choices=["ns3", "xrc"], help=argparse.SUPPRESS)
    ap.add_argument("--scheme", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--run-dir", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if not (0 <= a.steady_from < a.duration):
        ap.error("need 0 <= --steady-from < --duration")
    for v in (a.steady_from, a.duration):
        if abs(v / BIN_S - round(v / BIN_S)) > 1e-9:
            ap.error("--duration and --steady-from must be multiples of 0.1 s")
    if a.worker == "ns3":
        ns3_worker(a.scheme, a.duration, a.steady_from, Path(a.result), a.ns3_fix, not a.ns3_no_timestamps)
        return 0
    if a.worker == "xrc":
        xrc_worker(a.scheme, a.duration, a.steady_from, Path(a.result), Path(a.scenario), Path(a.run_dir),
                   bool(a.keep))
        return 0

    schemes = [s.strip() for s in a.schemes.split(",") if s.strip()]
    bad = [s for s in schemes if s not in ALL_SCHEMES]
    if bad or not schemes:
        ap.error(f"unknown scheme(s) {bad}; choose from {', '.join(ALL_SCHEMES)}")

    xpy = a.xrc_python
    if not xpy:
        venv = REPO / ".venv" / "bin" / "python"
        xpy = str(venv) if venv.exists() else sys.executable
    have = xrc_schemes(xpy)
    skipped = {}
    for s in schemes:
        if s not in have:
            skipped[s] = (f"skipped: this xrc ({xpy}) has no '{s}' congestion control (it has "
                          f"{', '.join(have)}); rebuild it with `make setup` once '{s}' is added")
            print(f"note: {s}: {skipped[s]}", file=sys.stderr)
    schemes = [s for s in schemes if s not in skipped]
    if not schemes:
        print("nothing to compare", file=sys.stderr)
        return 2
    npy = ensure_ns3(a.ns3_python, Path(a.ns3_venv))

    keep = Path(a.keep).resolve() if a.keep else None
    tmp_runs = None if keep else tempfile.TemporaryDirectory(prefix="crossval-xrc-")
    runs_root = keep or Path(tmp_runs.name)
    runs_root.mkdir(parents=True, exist_ok=True)
    common = ["--duration", f"{a.duration:g}", "--steady-from", f"{a.steady_from:g}"]
    ns3_opts = [*(["--ns3-fix", ",".join(sorted(a.ns3_fix))] if a.ns3_fix else []),
                *(["--ns3-no-timestamps"] if a.ns3_no_timestamps else [])]
    rows = []
    try:
        for s in schemes:
            print(f"[{s}] ns-3 ...", file=sys.stderr, flush=True)
            n = run_worker(npy, ["ns3", "--scheme", s, *common, *ns3_opts], f"ns-3 {s}")
            print(f"[{s}] xrc ...", file=sys.stderr, flush=True)
            x = run_worker(xpy, ["xrc", "--scheme", s, *common, "--scenario", str(Path(a.scenario).resolve()),
                                 "--run-dir", str(runs_root / s), *(["--keep", str(keep)] if keep else [])],
                           f"xrc {s}")
            dg = rel(x["goodput_mbps"], n["goodput_mbps"])
            dr = rel(x["rtt_mean_ms"], n["rtt_mean_ms"])
            rows.append({
                "scheme": s, "ns3": n, "xrc": x,
                "goodput_diff": dg, "rtt_mean_diff": dr,
                "rtt_p95_diff": rel(x["rtt_p95_ms"], n["rtt_p95_ms"]),
                "goodput_ok": dg is not None and abs(dg) <= GOODPUT_TOL,
                "rtt_ok": dr is not None and abs(dr) <= RTT_TOL,
            })
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp_runs:
            tmp_runs.cleanup()

    variant = []
    if a.ns3_fix:
        variant.append("fixes " + ", ".join(f for f in NS3_FIXES if f in a.ns3_fix))
    if a.ns3_no_timestamps:
        variant.append("timestamps off")
    print("ns-3.44 " + ("(" + "; ".join(variant) + ")" if variant else "as released") + " vs xrc")
    print(table(rows, a.steady_from, a.duration))
    print(f"targets: goodput within {GOODPUT_TOL:.0%}, mean RTT within {RTT_TOL:.0%} (diff = (xrc - ns-3) / ns-3)")
    for s, why in skipped.items():
        print(f"{s}: {why}")
    if a.json:
        doc = {"duration_s": a.duration, "window_s": [a.steady_from, a.duration],
               "ns3_fixes": sorted(a.ns3_fix), "ns3_timestamps": not a.ns3_no_timestamps,
               "targets": {"goodput": GOODPUT_TOL, "rtt_mean": RTT_TOL},
               "scenario": str(a.scenario), "results": rows, "skipped": skipped}
        text = json.dumps(doc, indent=2)
        if a.json == "-":
            print(text)
        else:
            Path(a.json).write_text(text + "\n")
    return 0 if all(r["goodput_ok"] and r["rtt_ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
