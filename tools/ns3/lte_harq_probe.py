#!/usr/bin/env python3
"""ns-3.44 LTE HARQ / BLER probe (reference measurements for xrc).

Scenario: one eNB, one static UE at --distance metres, LTE+EPC (PointToPointEpcHelper),
10 MHz (DL/UL bandwidth 50 RBs), all LTE defaults otherwise (LteHelper default
pathloss = Friis, no fading, PF scheduler, MiErrorModel AMC, data+ctrl error models on,
RLC UM which LteHelper selects automatically when an EPC helper is present).
A saturating downlink UDP flow (UdpClient, default 60 Mb/s, above the ~36 Mb/s PHY
peak of 50 RBs SISO) runs from a remote host through the PGW to the UE.

Everything is measured from ns-3's own trace sources, connected in small C++ helpers
(compiled with cppyy.cppdef, because ns-3 TracedCallbacks cannot take Python callables):
  * UE   .../LteUePhy/DlSpectrumPhy/DlPhyReception  (per TB: mcs, size, rv, ndi, correctness)
  * eNB  .../LteEnbPhy/DlPhyTransmission            (per TB sent: mcs, size, rv, ndi)
  * UE   .../LteUePhy/ReportCurrentCellRsrpSinr       (RSRP and average SINR of the serving cell)
  * PacketSink "Rx" on the UE                         (delivered application bytes)
Only events after --warmup seconds are counted.

Setup (Python 3.11):
  python3.11 -m venv venv && venv/bin/pip install ns3==3.44.post0
  (first import takes ~10-20 s: cppyy parses the ns-3 headers and JITs the helpers)

Usage:
  python lte_harq_probe.py --distance 5000            # one run, prints one row (+ --json)
  python lte_harq_probe.py --sweep 1000,4000,8000     # several distances in one process
  python lte_harq_probe.py --defaults                 # print the relevant ns-3 defaults only
"""

import argparse
import json
import math
import sys
import time

from ns import ns  # noqa: E402  (ns3 PyPI wheel, cppyy based)

cppyy = ns.cppyy

cppyy.cppdef(
    r"""
#include "ns3/core-module.h"
#include "ns3/lte-module.h"
#include "ns3/network-module.h"
#include "ns3/applications-module.h"
#include <map>
#include <string>
#include <sstream>

namespace xrcprobe {
using namespace ns3;

struct Stats {
    double t0 = 0.0;                   // seconds; events before are ignored
    // UE side (DlPhyReception): index = rv (0..3), ndi split
    uint64_t rxTb = 0, rxTbBad = 0;
    uint64_t rxNew = 0, rxNewBad = 0;  // ndi == 1 (first transmissions)
    uint64_t rxNewBytes = 0;           // sum of first-transmission TB sizes (bytes)
    uint64_t rxRetx = 0, rxRetxBad = 0;
    uint64_t rxByRv[8] = {0}, rxBadByRv[8] = {0};
    uint64_t rxBitsOk = 0;             // sum of TB sizes (bits) decoded OK
    std::map<int, uint64_t> mcsNew;    // MCS histogram of first transmissions
    // eNB side (DlPhyTransmission)
    uint64_t txTb = 0, txNew = 0, txRetx = 0;
    uint64_t txByRv[8] = {0};
    uint64_t txBits = 0;
    // SINR (linear average over samples)
    double sinrSum = 0.0, rsrpSum = 0.0; uint64_t sinrN = 0;
    // application
    uint64_t sinkBytes = 0, sinkPkts = 0;
};

static Stats g;

inline bool Active() { return Simulator::Now().GetSeconds() >= g.t0; }

void DlRx(std::string, PhyReceptionStatParameters p)
{
    if (!Active() || p.m_rnti == 0) return;
    bool ok = p.m_correctness != 0;
    g.rxTb++; if (!ok) g.rxTbBad++;
    int rv = p.m_rv < 8 ? p.m_rv : 7;
    g.rxByRv[rv]++; if (!ok) g.rxBadByRv[rv]++;
    if (p.m_ndi == 1) { g.rxNew++; if (!ok) g.rxNewBad++; g.mcsNew[p.m_mcs]++; g.rxNewBytes += p.m_size; }
    else { g.rxRetx++; if (!ok) g.rxRetxBad++; }
    if (ok) g.rxBitsOk += uint64_t(p.m_size) * 8;
}

void DlTx(std::string, PhyTransmissionStatParameters p)
{
    if (!Active() || p.m_rnti == 0) return;
    g.txTb++;
    int rv = p.m_rv < 8 ? p.m_rv : 7;
    g.txByRv[rv]++;
    if (p.m_ndi == 1) g.txNew++; else g.txRetx++;
    g.txBits += uint64_t(p.m_size) * 8;
}

void Sinr(std::string, uint16_t, uint16_t, double rsrp, double sinr, uint8_t)
{
    if (!Active()) return;
    g.sinrSum += sinr; g.rsrpSum += rsrp; g.sinrN++;
}

void SinkRx(std::string, Ptr<const Packet> pkt, const Address&)
{
    if (!Active()) return;
    g.sinkBytes += pkt->GetSize(); g.sinkPkts++;
}

std::string Connect(double t0)
{
    g = Stats();
    g.t0 = t0;
    std::ostringstream os;
    os << Config::ConnectFailSafe(
              "/NodeList/*/DeviceList/*/ComponentCarrierMapUe/*/LteUePhy/DlSpectrumPhy/DlPhyReception",
              MakeCallback(&DlRx))
       << Config::ConnectFailSafe(
              "/NodeList/*/DeviceList/*/ComponentCarrierMap/*/LteEnbPhy/DlPhyTransmission",
              MakeCallback(&DlTx))
       << Config::ConnectFailSafe(
              "/NodeList/*/DeviceList/*/ComponentCarrierMapUe/*/LteUePhy/ReportCurrentCellRsrpSinr",
              MakeCallback(&Sinr))
       << Config::ConnectFailSafe("/NodeList/*/ApplicationList/*/$ns3::PacketSink/Rx",
                                  MakeCallback(&SinkRx));
    return os.str();   // "1111" if all four trace sources were found
}

std::string McsHist()
{
    std::ostringstream os; bool first = true;
    for (auto& kv : g.mcsNew) { os << (first ? "" : ",") << kv.first << ":" << kv.second; first = false; }
    return os.str();
}

// Default value of an attribute as registered in the TypeId (installed library, not the mirror).
std::string AttrDefault(const std::string& tname, const std::string& aname)
{
    TypeId tid = TypeId::LookupByName(tname);
    TypeId::AttributeInformation info;
    if (!tid.LookupAttributeByName(aname, &info)) return "<no such attribute>";
    return info.initialValue->SerializeToString(info.checker);
}

// CQI -> MCS table used by the DL schedulers (LteAmc::GetMcsFromCqi)
std::string CqiMcsTable()
{
    Ptr<LteAmc> amc = CreateObject<LteAmc>();
    std::ostringstream os;
    for (int cqi = 0; cqi <= 15; ++cqi) os << (cqi ? "," : "") << amc->GetMcsFromCqi(cqi);
    return os.str();
}

// TB size (bits) of MCS m on n RBs
int TbSize(int mcs, int nrb)
{
    Ptr<LteAmc> amc = CreateObject<LteAmc>();
    return amc->GetDlTbSizeFromMcs(mcs, nrb);
}

// CQI an ideal UE would compute from a flat SINR (dB) over 50 RBs with the default AMC
// (LteAmc::CreateCqiFeedbacks, same call the UE PHY uses); rbgSize 3 = 10 MHz type-0 RBG
int CqiForSinrDb(double sinrDb, uint16_t earfcn, uint8_t nrb)
{
    Ptr<LteAmc> amc = CreateObject<LteAmc>();
    Ptr<SpectrumModel> sm = LteSpectrumValueHelper::GetSpectrumModel(earfcn, nrb);
    SpectrumValue v(sm);
    v = std::pow(10.0, sinrDb / 10.0);
    std::vector<int> cqi = amc->CreateCqiFeedbacks(v, 3);
    int mn = 99; for (int c : cqi) mn = std::min(mn, c);
    return mn;
}
} // namespace xrcprobe
"""
)

X = cppyy.gbl.xrcprobe


def defaults():
    """Defaults of the installed ns-3 (read from TypeId attribute tables)."""
    q = [
        ("ns3::LteAmc", "AmcModel"),
        ("ns3::LteAmc", "Ber"),
        ("ns3::LteSpectrumPhy", "DataErrorModelEnabled"),
        ("ns3::LteSpectrumPhy", "CtrlErrorModelEnabled"),
        ("ns3::LteHelper", "PathlossModel"),
        ("ns3::LteHelper", "FadingModel"),
        ("ns3::LteHelper", "Scheduler"),
        ("ns3::LteHelper", "UseIdealRrc"),
        ("ns3::LteHelper", "UsePdschForCqiGeneration"),
        ("ns3::LteEnbPhy", "TxPower"),
        ("ns3::LteEnbPhy", "NoiseFigure"),
        ("ns3::LteUePhy", "TxPower"),
        ("ns3::LteUePhy", "NoiseFigure"),
        ("ns3::LteEnbNetDevice", "DlBandwidth"),
        ("ns3::LteEnbNetDevice", "DlEarfcn"),
        ("ns3::LteEnbRrc", "EpsBearerToRlcMapping"),
        ("ns3::LteRlcUm", "MaxTxBufferSize"),
        ("ns3::PfFfMacScheduler", "HarqEnabled"),
        ("ns3::PfFfMacScheduler", "CqiTimerThreshold"),
        ("ns3::LteUePhy", "DownlinkCqiPeriodicity"),
        ("ns3::LteEnbRrc", "SrsPeriodicity"),
    ]
    return {f"{t}::{a}": str(X.AttrDefault(t, a)) for t, a in q}


def run_one(distance, sim_time=6.0, warmup=1.0, udp_rate_mbps=60.0, pkt_size=1400, seed_run=1, amc=""):
    if amc:  # non-default AMC model ("PiroEW2010"); default is "Vienna" (= LteAmc::MiErrorModel)
        ns.Config.SetDefault("ns3::LteAmc::AmcModel", ns.StringValue(amc))
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(seed_run)

    ns.Config.SetDefault("ns3::LteEnbNetDevice::DlBandwidth", ns.UintegerValue(50))
    ns.Config.SetDefault("ns3::LteEnbNetDevice::UlBandwidth", ns.UintegerValue(50))

    lte = ns.CreateObject[ns.LteHelper]()
    epc = ns.CreateObject[ns.PointToPointEpcHelper]()
    lte.SetEpcHelper(epc)
    pgw = epc.GetPgwNode()

    remote_c = ns.NodeContainer()
    remote_c.Create(1)
    remote = remote_c.Get(0)
    inet = ns.InternetStackHelper()
    inet.Install(remote_c)

    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate("100Gb/s")))
    p2p.SetDeviceAttribute("Mtu", ns.UintegerValue(1500))
    p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.MilliSeconds(1)))
    inet_devs = p2p.Install(pgw, remote)
    ipv4h = ns.Ipv4AddressHelper()
    ipv4h.SetBase(ns.Ipv4Address("1.0.0.0"), ns.Ipv4Mask("255.0.0.0"))
    ipv4h.Assign(inet_devs)
    rt_helper = ns.Ipv4StaticRoutingHelper()
    remote_rt = rt_helper.GetStaticRouting(remote.GetObject[ns.Ipv4]())
    remote_rt.AddNetworkRouteTo(ns.Ipv4Address("7.0.0.0"), ns.Ipv4Mask("255.0.0.0"), 1)

    enb_c = ns.NodeContainer()
    enb_c.Create(1)
    ue_c = ns.NodeContainer()
    ue_c.Create(1)
    pos = ns.CreateObject[ns.ListPositionAllocator]()
    pos.Add(ns.Vector(0.0, 0.0, 0.0))
    pos.Add(ns.Vector(float(distance), 0.0, 0.0))
    mob = ns.MobilityHelper()
    mob.SetMobilityModel("ns3::ConstantPositionMobilityModel")
    mob.SetPositionAllocator(pos)
    mob.Install(enb_c)
    mob.Install(ue_c)

    enb_devs = lte.InstallEnbDevice(enb_c)
    ue_devs = lte.InstallUeDevice(ue_c)
    inet.Install(ue_c)
    ue_ifs = epc.AssignUeIpv4Address(ue_devs)
    ue_rt = rt_helper.GetStaticRouting(ue_c.Get(0).GetObject[ns.Ipv4]())
    ue_rt.SetDefaultRoute(epc.GetUeDefaultGatewayAddress(), 1)
    lte.Attach(ue_devs.Get(0), enb_devs.Get(0))

    port = 1100
    sink_h = ns.PacketSinkHelper(
        "ns3::UdpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
    )
    sink_apps = sink_h.Install(ue_c.Get(0))
    interval_s = pkt_size * 8.0 / (udp_rate_mbps * 1e6)
    cli = ns.UdpClientHelper(ue_ifs.GetAddress(0).ConvertTo(), port)
    cli.SetAttribute("Interval", ns.TimeValue(ns.Seconds(interval_s)))
    cli.SetAttribute("MaxPackets", ns.UintegerValue(0))  # 0 = unlimited
    cli.SetAttribute("PacketSize", ns.UintegerValue(pkt_size))
    cli_apps = cli.Install(remote)
    sink_apps.Start(ns.Seconds(0.1))
    cli_apps.Start(ns.Seconds(0.2))

    conn = str(X.Connect(warmup))
    ns.Simulator.Stop(ns.Seconds(sim_time))
    w0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - w0
    events = int(ns.Simulator.GetEventCount())
    ns.Simulator.Destroy()

    g = X.g
    dur = sim_time - warmup
    sinr_db = 10 * math.log10(g.sinrSum / g.sinrN) if g.sinrN else float("nan")
    rsrp_dbm = 10 * math.log10(g.rsrpSum / g.sinrN) + 30 if g.sinrN else float("nan")
    hist = {int(k): int(v) for k, v in (kv.split(":") for kv in str(X.McsHist()).split(",") if kv)}
    mcs_mode = max(hist, key=hist.get) if hist else -1
    res = {
        "distance_m": distance,
        "amc_model": str(X.AttrDefault("ns3::LteAmc", "AmcModel")),
        "trace_connect": conn,
        "sinr_db": sinr_db,
        "rsrp_dbm": rsrp_dbm,
        "cqi_ideal_from_sinr": int(X.CqiForSinrDb(sinr_db, 100, 50)) if g.sinrN else None,
        "mcs_mode": mcs_mode,
        "mcs_hist_new": hist,
        "ue_rx_tb": int(g.rxTb),
        "ue_rx_new": int(g.rxNew),
        "ue_rx_new_bad": int(g.rxNewBad),
        "bler_first_tx": g.rxNewBad / g.rxNew if g.rxNew else float("nan"),
        "tb_bytes_mean_new": g.rxNewBytes / g.rxNew if g.rxNew else float("nan"),
        "ue_rx_retx": int(g.rxRetx),
        "ue_rx_retx_bad": int(g.rxRetxBad),
        "rx_by_rv": [int(g.rxByRv[i]) for i in range(4)],
        "rx_bad_by_rv": [int(g.rxBadByRv[i]) for i in range(4)],
        "enb_tx_tb": int(g.txTb),
        "enb_tx_new": int(g.txNew),
        "enb_tx_retx": int(g.txRetx),
        "tx_by_rv": [int(g.txByRv[i]) for i in range(4)],
        "retx_share": g.txRetx / g.txTb if g.txTb else float("nan"),
        # TBs the eNB sent but the UE PHY never evaluated (PDCCH/ctrl error => DCI lost)
        "tb_not_seen_by_ue": int(g.txTb) - int(g.rxTb),
        "phy_ok_mbps": g.rxBitsOk / dur / 1e6,
        "phy_tx_mbps": g.txBits / dur / 1e6,
        "app_goodput_mbps": g.sinkBytes * 8 / dur / 1e6,
        "udp_offered_mbps": udp_rate_mbps,
        "sim_time_s": sim_time,
        "warmup_s": warmup,
        "wall_s": wall,
        "events": events,
    }
    return res


def fmt_row(r):
    return (
        f"{r['distance_m']:>8.0f} {r['sinr_db']:>7.2f} {str(r['cqi_ideal_from_sinr']):>4} "
        f"{r['mcs_mode']:>4} {r['bler_first_tx']:>8.4f} {r['retx_share']:>8.4f} "
        f"{r['rx_bad_by_rv'][1]:>5}/{r['rx_by_rv'][1]:<5} {r['tb_not_seen_by_ue']:>5} "
        f"{r['phy_ok_mbps']:>8.2f} {r['app_goodput_mbps']:>8.2f} {r['wall_s']:>6.1f}"
    )


HDR = (
    f"{'dist_m':>8} {'SINR_dB':>7} {'CQI*':>4} {'MCS':>4} {'BLER_1st':>8} {'retx_shr':>8} "
    f"{'rv1 bad/n':>11} {'lost':>5} {'PHY_Mbps':>8} {'APP_Mbps':>8} {'wall_s':>6}"
)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--distance", type=float, default=1000.0, help="eNB-UE distance in metres")
    ap.add_argument("--sweep", type=str, default="", help="comma-separated distances (m)")
    ap.add_argument("--sim-time", type=float, default=6.0, help="simulated seconds")
    ap.add_argument("--warmup", type=float, default=1.0, help="seconds ignored at start")
    ap.add_argument("--udp-rate", type=float, default=60.0, help="offered DL UDP rate, Mb/s")
    ap.add_argument("--run", type=int, default=1, help="RngRun")
    ap.add_argument("--json", type=str, default="", help="append JSON lines here")
    ap.add_argument("--amc", type=str, default="", help="override LteAmc::AmcModel (Vienna|PiroEW2010)")
    ap.add_argument("--defaults", action="store_true", help="print ns-3 defaults and exit")
    a = ap.parse_args()

    print("ns-3.44 LTE HARQ probe; defaults in effect (installed TypeId tables):")
    for k, v in defaults().items():
        print(f"  {k} = {v}")
    cqi_mcs = str(X.CqiMcsTable())
    print(f"  LteAmc::GetMcsFromCqi (CQI 0..15) = {cqi_mcs}")
    print(f"  TBS(MCS 28, 50 RB) = {X.TbSize(28, 50)} bits/ms")
    if a.defaults:
        return

    dists = [float(x) for x in a.sweep.split(",")] if a.sweep else [a.distance]
    if a.amc:
        ns.Config.SetDefault("ns3::LteAmc::AmcModel", ns.StringValue(a.amc))
        print(f"  OVERRIDE LteAmc::AmcModel = {X.AttrDefault('ns3::LteAmc', 'AmcModel')}; "
              f"GetMcsFromCqi = {X.CqiMcsTable()}")
    print()
    print("CQI* = CQI an ideal UE computes from the reported SINR (LteAmc::CreateCqiFeedbacks, flat)")
    print("BLER_1st = failed first transmissions (ndi=1) / first transmissions, UE DlPhyReception")
    print("retx_shr = retransmitted TBs / all TBs sent, eNB DlPhyTransmission")
    print("lost = TBs sent by eNB but never evaluated by UE PHY (DCI lost to PDCCH error model)")
    print(HDR)
    for d in dists:
        r = run_one(d, a.sim_time, a.warmup, a.udp_rate, seed_run=a.run, amc=a.amc)
        print(fmt_row(r), flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")
        else:
            print("   ", json.dumps({k: r[k] for k in ("mcs_hist_new", "tb_bytes_mean_new", "rx_by_rv", "rx_bad_by_rv",
                                                       "tx_by_rv", "events", "trace_connect")}))


if __name__ == "__main__":
    main()
