//! Transport block size determination for the PDSCH, TS 38.214 §5.1.3.2
//! (steps 1 to 4, Table 5.1.3.2-1), and the LDPC base graph and code block
//! segmentation of TS 38.212 §7.2.2 and §5.2.2 that step 4's formula is
//! built to fit.
//!
//! # Arithmetic: integers only
//!
//! Step 2 multiplies by the target code rate `R`, which is not an integer.
//! Here `R` is held as `R × 2048` (exact for every table row, including
//! 682.5/1024 and 916.5/1024), so `N_info × 2048 = N_RE · (R × 2048) · Q_m
//! · υ` is an exact integer and no floating point enters anywhere:
//!
//! * step 2's test `N_info ≤ 3824` compares `N_info × 2048` with `3824 ×
//!   2048`;
//! * step 3's `⌊log2(N_info)⌋` is `⌊log2(N_info × 2048)⌋ − 11` (2048 is
//!   2^11) and `⌊N_info / 2^n⌋` a right shift by `n + 11`;
//! * step 4's `round((N_info − 24) / 2^n)` with ties up is `⌊(y + 2^(n+10))
//!   / 2^(n+11)⌋` with `y = (N_info − 24) × 2048`;
//! * step 4's `R ≤ 1/4` is `R × 2048 ≤ 512`, and TS 38.212's `R ≤ 0.67` is
//!   `100 · (R × 2048) ≤ 67 · 2048`.
//!
//! The result is the specification's own rational arithmetic, with no
//! rounding before the steps that round. Two independent implementations
//! round earlier (see `reference_tests.rs` and `docs/nr.md`): OAI
//! truncates `N_info` to an integer, which sends 3824 < `N_info` < 3825 to
//! the table (TBS 3824) instead of the formula; srsRAN computes `N_info` in
//! single precision, which is not exact above 2^24 but changed no TBS in a
//! sweep of 27.6 million allocations.

use std::fmt;

use super::mcs::{CodeRate, McsRate};

/// Subcarriers per resource block, `N_sc^RB` (TS 38.211 §4.4.4.1).
pub const SUBCARRIERS_PER_PRB: u16 = 12;

/// The cap on resource elements per PRB in step 1 of TS 38.214 §5.1.3.2.
pub const MAX_RE_PER_PRB: u16 = 156;

/// The largest `N_info` handled by the table (step 3); above it, step 4.
pub const MAX_TABLE_N_INFO: u32 = 3824;

/// The number of PRBs `n_PRB` allocated to a UE in one slot, 1..=275 (the
/// largest bandwidth part, TS 38.211 §4.4.5).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prbs(u16);

impl Prbs {
    pub const MAX: Prbs = Prbs(275);

    /// `Some` for 1..=275, `None` otherwise.
    pub const fn new(count: u16) -> Option<Prbs> {
        if count >= 1 && count <= 275 {
            Some(Prbs(count))
        } else {
            None
        }
    }
    pub const fn get(self) -> u16 {
        self.0
    }
}

/// The number of spatial layers υ of one codeword, 1..=4. (Two-codeword
/// transmissions with 5..=8 layers are not modelled.)
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Layers(u8);

impl Layers {
    pub const ONE: Layers = Layers(1);

    /// `Some` for 1..=4, `None` otherwise.
    pub const fn new(count: u8) -> Option<Layers> {
        if count >= 1 && count <= 4 {
            Some(Layers(count))
        } else {
            None
        }
    }
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// A transport block size in bits. Every TBS is a multiple of 8.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TbsBits(u32);

impl TbsBits {
    pub const fn get(self) -> u32 {
        self.0
    }
    /// The size in bytes (every TBS is a whole number of bytes).
    pub const fn bytes(self) -> u32 {
        self.0 / 8
    }
}

/// `N_oh^PRB`, the RRC parameter `xOverhead` of `PDSCH-ServingCellConfig`
/// (TS 38.331): 0 (not configured), 6, 12 or 18 REs per PRB.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum XOverhead {
    #[default]
    Xoh0,
    Xoh6,
    Xoh12,
    Xoh18,
}

impl XOverhead {
    pub const fn res_per_prb(self) -> u16 {
        match self {
            XOverhead::Xoh0 => 0,
            XOverhead::Xoh6 => 6,
            XOverhead::Xoh12 => 12,
            XOverhead::Xoh18 => 18,
        }
    }
    /// `Some` for 0, 6, 12, 18.
    pub const fn from_res_per_prb(res: u16) -> Option<XOverhead> {
        match res {
            0 => Some(XOverhead::Xoh0),
            6 => Some(XOverhead::Xoh6),
            12 => Some(XOverhead::Xoh12),
            18 => Some(XOverhead::Xoh18),
            _ => None,
        }
    }
}

/// A PDSCH time-domain allocation that leaves no resource element per PRB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceError {
    /// `N_symb^sh` is not in 1..=14.
    Symbols(u8),
    /// `12 · N_symb^sh − N_DMRS^PRB − N_oh^PRB ≤ 0`.
    NoDataRe {
        symbols: u8,
        dmrs_res_per_prb: u16,
        overhead_res_per_prb: u16,
    },
}

impl fmt::Display for ResourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceError::Symbols(s) => {
                write!(f, "PDSCH symbols per slot N_symb^sh = {s} is outside 1..=14")
            }
            ResourceError::NoDataRe {
                symbols,
                dmrs_res_per_prb,
                overhead_res_per_prb,
            } => write!(
                f,
                "no data resource element left per PRB: 12 × {symbols} symbols − {dmrs_res_per_prb} DM-RS REs − \
                 {overhead_res_per_prb} xOverhead REs ≤ 0"
            ),
        }
    }
}

impl std::error::Error for ResourceError {}

/// The per-PRB inputs of step 1 of TS 38.214 §5.1.3.2, and the layer count
/// of step 2, validated so that `N'_RE` ≥ 1.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PdschResources {
    symbols: u8,
    dmrs_res_per_prb: u16,
    overhead: XOverhead,
    layers: Layers,
}

impl PdschResources {
    /// `symbols` is `N_symb^sh` (1..=14), `dmrs_res_per_prb` is
    /// `N_DMRS^PRB`: DM-RS REs per PRB over the allocation, counting the
    /// CDM groups without data (one front-loaded type-1 DM-RS symbol with
    /// two CDM groups without data is 12; with one, 6).
    pub fn new(
        symbols: u8,
        dmrs_res_per_prb: u16,
        overhead: XOverhead,
        layers: Layers,
    ) -> Result<PdschResources, ResourceError> {
        if !(1..=14).contains(&symbols) {
            return Err(ResourceError::Symbols(symbols));
        }
        if SUBCARRIERS_PER_PRB * u16::from(symbols) <= dmrs_res_per_prb + overhead.res_per_prb() {
            return Err(ResourceError::NoDataRe {
                symbols,
                dmrs_res_per_prb,
                overhead_res_per_prb: overhead.res_per_prb(),
            });
        }
        Ok(PdschResources {
            symbols,
            dmrs_res_per_prb,
            overhead,
            layers,
        })
    }

    pub const fn symbols(&self) -> u8 {
        self.symbols
    }
    pub const fn dmrs_res_per_prb(&self) -> u16 {
        self.dmrs_res_per_prb
    }
    pub const fn overhead(&self) -> XOverhead {
        self.overhead
    }
    pub const fn layers(&self) -> Layers {
        self.layers
    }

    /// `N'_RE = 12 · N_symb^sh − N_DMRS^PRB − N_oh^PRB` (before the cap).
    pub const fn re_per_prb(&self) -> u16 {
        SUBCARRIERS_PER_PRB * self.symbols as u16 - self.dmrs_res_per_prb - self.overhead.res_per_prb()
    }

    /// `min(156, N'_RE)`.
    pub const fn capped_re_per_prb(&self) -> u16 {
        let n = self.re_per_prb();
        if n < MAX_RE_PER_PRB {
            n
        } else {
            MAX_RE_PER_PRB
        }
    }
}

/// Which of steps 3 and 4 determined the TBS.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TbsStep {
    /// Step 3: `N_info ≤ 3824`, quantized and looked up in Table 5.1.3.2-1.
    Table,
    /// Step 4: `N_info > 3824`, the formula, with this many code blocks `C`
    /// (from `R ≤ 1/4`: `⌈(N'_info + 24)/3816⌉`; otherwise
    /// `⌈(N'_info + 24)/8424⌉` above 8424, else 1).
    Formula { code_blocks: u32 },
}

/// Every intermediate value of TS 38.214 §5.1.3.2 for one allocation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TbsDetermination {
    /// `N_RE = min(156, N'_RE) · n_PRB` (step 1).
    pub n_re: u32,
    /// `N_info × 2048`, exact (step 2, with S = 1).
    pub n_info_x2048: u64,
    /// `N'_info` (step 3 or 4).
    pub n_info_prime: u32,
    pub step: TbsStep,
    pub tbs: TbsBits,
}

impl TbsDetermination {
    /// `N_info` in bits, for display (the determination used the exact value).
    pub fn n_info(&self) -> f64 {
        self.n_info_x2048 as f64 / 2048.0
    }
}

/// TS 38.214 Table 5.1.3.2-1, "TBS for N_info ≤ 3824": the 93 sizes, by
/// index 1..=93 (entry `i` here is index `i + 1`).
#[rustfmt::skip]
pub static TBS_TABLE_5_1_3_2_1: [u16; 93] = [
    //  1..=10
      24,   32,   40,   48,   56,   64,   72,   80,   88,   96,
    // 11..=20
     104,  112,  120,  128,  136,  144,  152,  160,  168,  176,
    // 21..=30
     184,  192,  208,  224,  240,  256,  272,  288,  304,  320,
    // 31..=40
     336,  352,  368,  384,  408,  432,  456,  480,  504,  528,
    // 41..=50
     552,  576,  608,  640,  672,  704,  736,  768,  808,  848,
    // 51..=60
     888,  928,  984, 1032, 1064, 1128, 1160, 1192, 1224, 1256,
    // 61..=70
    1288, 1320, 1352, 1416, 1480, 1544, 1608, 1672, 1736, 1800,
    // 71..=80
    1864, 1928, 2024, 2088, 2152, 2216, 2280, 2408, 2472, 2536,
    // 81..=90
    2600, 2664, 2728, 2792, 2856, 2976, 3104, 3240, 3368, 3496,
    // 91..=93
    3624, 3752, 3824,
];

/// `2^11`: `N_info` is carried multiplied by this (see the module doc).
const SCALE_LOG2: u32 = 11;

/// Step 3: the TBS for `N_info ≤ 3824`, `N_info = x / 2048`.
fn step_3(x: u64) -> (u32, TbsBits) {
    // n = max(3, ⌊log2(N_info)⌋ − 6), with ⌊log2(x / 2^11)⌋ = ⌊log2 x⌋ − 11.
    let n = (i64::from(x.ilog2()) - i64::from(SCALE_LOG2) - 6).max(3) as u32;
    // N'_info = max(24, 2^n · ⌊N_info / 2^n⌋).
    let n_info_prime = (((x >> (n + SCALE_LOG2)) << n) as u32).max(24);
    // The closest TBS of Table 5.1.3.2-1 not less than N'_info (which is ≤
    // N_info ≤ 3824, the last entry).
    let tbs = TBS_TABLE_5_1_3_2_1
        .iter()
        .map(|&t| u32::from(t))
        .find(|&t| t >= n_info_prime)
        .expect("N'_info ≤ 3824");
    (n_info_prime, TbsBits(tbs))
}

/// Step 4: the TBS for `N_info > 3824`, `N_info = x / 2048`.
fn step_4(x: u64, code_rate: CodeRate) -> (u32, u32, TbsBits) {
    // y = (N_info − 24) · 2048 > 3800 · 2048.
    let y = x - (24 << SCALE_LOG2);
    // n = ⌊log2(N_info − 24)⌋ − 5 ≥ 6.
    let n = y.ilog2() - SCALE_LOG2 - 5;
    // round((N_info − 24) / 2^n), ties towards the next largest integer.
    let rounded = (y + (1u64 << (n + SCALE_LOG2 - 1))) >> (n + SCALE_LOG2);
    // N'_info = max(3840, 2^n · round(...)).
    let n_info_prime = ((rounded << n) as u32).max(3840);
    let b = n_info_prime + 24;
    let code_blocks = if code_rate.x2048() <= 512 {
        // R ≤ 1/4: LDPC base graph 2, K_cb − 24 = 3816 bits per code block.
        b.div_ceil(3816)
    } else if n_info_prime > 8424 {
        // Base graph 1, K_cb − 24 = 8424.
        b.div_ceil(8424)
    } else {
        1
    };
    // TBS = 8 · C · ⌈(N'_info + 24) / (8 · C)⌉ − 24 (C = 1 is the third case).
    let tbs = 8 * code_blocks * b.div_ceil(8 * code_blocks) - 24;
    (n_info_prime, code_blocks, TbsBits(tbs))
}

/// TS 38.214 §5.1.3.2 for `n_PRB = prbs` PRBs of `resources` at `rate`
/// (the row of the MCS table), with the scaling factor S = 1: every
/// intermediate value.
pub fn tbs_determination(rate: McsRate, resources: &PdschResources, prbs: Prbs) -> TbsDetermination {
    // Step 1: N_RE = min(156, N'_RE) · n_PRB.
    let n_re = u32::from(resources.capped_re_per_prb()) * u32::from(prbs.0);
    // Step 2: N_info = N_RE · R · Q_m · υ, times 2048. At most 156 · 275 ·
    // 1896 · 8 · 4 < 2^32, held in u64 for headroom.
    let x = u64::from(n_re)
        * u64::from(rate.code_rate.x2048())
        * u64::from(rate.modulation.order())
        * u64::from(resources.layers.0);
    if x <= u64::from(MAX_TABLE_N_INFO) << SCALE_LOG2 {
        let (n_info_prime, tbs) = step_3(x);
        TbsDetermination {
            n_re,
            n_info_x2048: x,
            n_info_prime,
            step: TbsStep::Table,
            tbs,
        }
    } else {
        let (n_info_prime, code_blocks, tbs) = step_4(x, rate.code_rate);
        TbsDetermination {
            n_re,
            n_info_x2048: x,
            n_info_prime,
            step: TbsStep::Formula { code_blocks },
            tbs,
        }
    }
}

/// The transport block size of TS 38.214 §5.1.3.2 (S = 1).
pub fn tbs(rate: McsRate, resources: &PdschResources, prbs: Prbs) -> TbsBits {
    tbs_determination(rate, resources, prbs).tbs
}

// ---------------------------------------------------------------------------
// TS 38.212: LDPC base graph (§7.2.2) and code block segmentation (§5.2.2)
// ---------------------------------------------------------------------------

/// An LDPC base graph of TS 38.212 §5.3.2.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LdpcBaseGraph {
    /// Base graph 1: large blocks, high rates; `K_cb` = 8448.
    Bg1,
    /// Base graph 2: small blocks or low rates; `K_cb` = 3840.
    Bg2,
}

impl LdpcBaseGraph {
    /// The maximum code block size `K_cb` (TS 38.212 §5.2.2).
    pub const fn max_code_block_bits(self) -> u32 {
        match self {
            LdpcBaseGraph::Bg1 => 8448,
            LdpcBaseGraph::Bg2 => 3840,
        }
    }
}

/// The base graph of a transport block of `tbs` bits at target code rate
/// `rate`, TS 38.212 §7.2.2: base graph 2 if `A ≤ 292`, or `A ≤ 3824` and
/// `R ≤ 0.67`, or `R ≤ 0.25`; otherwise base graph 1.
pub fn ldpc_base_graph(tbs: TbsBits, rate: CodeRate) -> LdpcBaseGraph {
    let a = tbs.0;
    let r = u32::from(rate.x2048());
    let rate_le_0_67 = 100 * r <= 67 * 2048;
    let rate_le_0_25 = r <= 512;
    if a <= 292 || (a <= 3824 && rate_le_0_67) || rate_le_0_25 {
        LdpcBaseGraph::Bg2
    } else {
        LdpcBaseGraph::Bg1
    }
}

/// The code block segmentation of a transport block (TS 38.212 §7.2.1 and
/// §5.2.2), up to the code block size `K'` (the lifting size `Z_c` and
/// filler bits are not computed).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Segmentation {
    pub base_graph: LdpcBaseGraph,
    /// Transport block CRC length: 24 if `A > 3824`, else 16 (§7.2.1).
    pub tb_crc_bits: u32,
    /// `B = A + L_TB`, the bits entering segmentation.
    pub b: u32,
    /// `C`, the number of code blocks.
    pub code_blocks: u32,
    /// The per-code-block CRC length `L`: 0 for one block, else 24.
    pub cb_crc_bits: u32,
    /// `B' = B + C · L`.
    pub b_prime: u32,
}

impl Segmentation {
    /// Whether every code block carries the same whole number of bits
    /// (`C` divides `B'`), as TS 38.214's TBS formula ensures.
    pub fn is_even(&self) -> bool {
        self.b_prime.is_multiple_of(self.code_blocks)
    }
    /// `K' = B' / C` (exact when [`Self::is_even`]).
    pub fn bits_per_code_block(&self) -> u32 {
        self.b_prime / self.code_blocks
    }
}

/// TS 38.212 §7.2.1 (CRC), §7.2.2 (base graph) and §5.2.2 (segmentation) for
/// a transport block of `tbs` bits at `rate`.
pub fn segmentation(tbs: TbsBits, rate: CodeRate) -> Segmentation {
    let base_graph = ldpc_base_graph(tbs, rate);
    let tb_crc_bits = if tbs.0 > MAX_TABLE_N_INFO { 24 } else { 16 };
    let b = tbs.0 + tb_crc_bits;
    let k_cb = base_graph.max_code_block_bits();
    let (code_blocks, cb_crc_bits) = if b <= k_cb { (1, 0) } else { (b.div_ceil(k_cb - 24), 24) };
    Segmentation {
        base_graph,
        tb_crc_bits,
        b,
        code_blocks,
        cb_crc_bits,
        b_prime: b + code_blocks * cb_crc_bits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ran::nr::mcs::{mcs_rate, Mcs, McsTable, Modulation};

    fn rate(table: McsTable, i: u8) -> McsRate {
        mcs_rate(table, Mcs::new(i).unwrap()).unwrap()
    }
    fn res(symbols: u8, dmrs: u16) -> PdschResources {
        PdschResources::new(symbols, dmrs, XOverhead::Xoh0, Layers::ONE).unwrap()
    }
    fn prbs(n: u16) -> Prbs {
        Prbs::new(n).unwrap()
    }
    fn r(q_m: u8, r_x2048: u16) -> McsRate {
        let modulation = match q_m {
            2 => Modulation::Qpsk,
            4 => Modulation::Qam16,
            6 => Modulation::Qam64,
            _ => Modulation::Qam256,
        };
        McsRate {
            modulation,
            code_rate: CodeRate::from_x2048(r_x2048).unwrap(),
        }
    }

    #[test]
    fn constructors_accept_exactly_their_ranges() {
        assert_eq!(Prbs::new(0), None);
        assert_eq!(Prbs::new(1).map(Prbs::get), Some(1));
        assert_eq!(Prbs::new(275).map(Prbs::get), Some(275));
        assert_eq!(Prbs::new(276), None);
        assert_eq!(Layers::new(0), None);
        assert_eq!(Layers::new(4).map(Layers::get), Some(4));
        assert_eq!(Layers::new(5), None);
        for (n, x) in [
            (0, Some(XOverhead::Xoh0)),
            (6, Some(XOverhead::Xoh6)),
            (18, Some(XOverhead::Xoh18)),
        ] {
            assert_eq!(XOverhead::from_res_per_prb(n), x);
        }
        assert_eq!(XOverhead::from_res_per_prb(5), None);
    }

    #[test]
    fn resources_reject_0_or_15_symbols_and_allocations_without_data() {
        assert_eq!(
            PdschResources::new(0, 0, XOverhead::Xoh0, Layers::ONE),
            Err(ResourceError::Symbols(0))
        );
        assert_eq!(
            PdschResources::new(15, 12, XOverhead::Xoh0, Layers::ONE),
            Err(ResourceError::Symbols(15))
        );
        let err = PdschResources::new(1, 6, XOverhead::Xoh6, Layers::ONE).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no data resource element left per PRB: 12 × 1 symbols − 6 DM-RS REs − 6 xOverhead REs ≤ 0"
        );
        assert_eq!(
            PdschResources::new(1, 5, XOverhead::Xoh6, Layers::ONE)
                .unwrap()
                .re_per_prb(),
            1
        );
    }

    #[test]
    fn re_per_prb_is_capped_at_156() {
        assert_eq!(res(14, 0).re_per_prb(), 168);
        assert_eq!(res(14, 0).capped_re_per_prb(), 156);
        assert_eq!(res(14, 12).capped_re_per_prb(), 156);
        assert_eq!(res(14, 13).capped_re_per_prb(), 155);
        assert_eq!(res(12, 12).capped_re_per_prb(), 132);
    }

    #[test]
    fn the_table_has_93_increasing_multiples_of_8_from_24_to_3824() {
        assert_eq!(TBS_TABLE_5_1_3_2_1.len(), 93);
        assert_eq!(TBS_TABLE_5_1_3_2_1[0], 24);
        assert_eq!(TBS_TABLE_5_1_3_2_1[92], 3824);
        for w in TBS_TABLE_5_1_3_2_1.windows(2) {
            assert!(w[0] < w[1] && w[1].is_multiple_of(8), "{w:?}");
        }
    }

    #[test]
    fn a_worked_table_example_by_hand() {
        // 64QAM MCS 10 (16QAM, 340), 10 PRBs, 12 symbols, 12 DM-RS REs:
        // N'_RE = 132, N_RE = 1320, N_info = 1320 · 340/1024 · 4 = 1753.1;
        // n = max(3, 10 − 6) = 4, N'_info = 16 · ⌊1753.1/16⌋ = 1744;
        // smallest table entry ≥ 1744 is 1800.
        let d = tbs_determination(rate(McsTable::Qam64, 10), &res(12, 12), prbs(10));
        assert_eq!(d.n_re, 1320);
        assert_eq!(d.n_info_x2048, 1320 * 680 * 4);
        assert_eq!(d.n_info_prime, 1744);
        assert_eq!(d.step, TbsStep::Table);
        assert_eq!(d.tbs.get(), 1800);
    }

    #[test]
    fn a_worked_formula_example_by_hand() {
        // 256QAM MCS 27 (8, 948), 273 PRBs, 12 symbols, 12 DM-RS REs:
        // N_RE = 132 · 273 = 36036, N_info = 36036 · 948/1024 · 8 =
        // 266 890.6; n = ⌊log2(266 866.6)⌋ − 5 = 18 − 5 = 13;
        // round(266 866.6 / 8192) = round(32.58) = 33, N'_info = 270 336;
        // R > 1/4 and N'_info > 8424: C = ⌈270 360 / 8424⌉ = 33;
        // TBS = 8 · 33 · ⌈270 360 / 264⌉ − 24 = 264 · 1025 − 24 = 270 576.
        let d = tbs_determination(rate(McsTable::Qam256, 27), &res(12, 12), prbs(273));
        assert_eq!(d.n_re, 36036);
        assert_eq!(d.n_info_prime, 270_336);
        assert_eq!(d.step, TbsStep::Formula { code_blocks: 33 });
        assert_eq!(d.tbs.get(), 270_576);
    }

    #[test]
    fn n_info_exactly_3824_uses_the_table_and_above_it_the_formula() {
        // QPSK at R = 1/2 carries one bit per RE. N'_RE = 12 · 2 − 8 = 16.
        let half = r(2, 1024);
        let resources = PdschResources::new(2, 8, XOverhead::Xoh0, Layers::ONE).unwrap();
        // 239 PRBs: N_RE = N_info = 3824, the table's last entry.
        let d = tbs_determination(half, &resources, prbs(239));
        assert_eq!((d.n_re, d.n_info_x2048), (3824, 3824 << SCALE_LOG2));
        assert_eq!((d.step, d.tbs.get()), (TbsStep::Table, 3824));
        // 240 PRBs: N_info = 3840 > 3824, so the formula: N'_info = 64 ·
        // round(3816 / 64) = 3840 and TBS = 8 · ⌈3864 / 8⌉ − 24 = 3840.
        let d = tbs_determination(half, &resources, prbs(240));
        assert_eq!(
            (d.step, d.n_info_prime, d.tbs.get()),
            (TbsStep::Formula { code_blocks: 1 }, 3840, 3840)
        );
    }

    #[test]
    fn step_4_rounds_ties_up() {
        // N_info − 24 = 4000: n = ⌊log2 4000⌋ − 5 = 6 and 4000 / 64 = 62.5,
        // a tie, rounds to 63: N'_info = 4032. One 2048th of a bit less
        // rounds to 62: 3968.
        let half = CodeRate::from_x2048(1024).unwrap();
        let x = (24 + 4000u64) << SCALE_LOG2;
        assert_eq!(step_4(x, half).0, 4032);
        assert_eq!(step_4(x - 1, half).0, 3968);
    }

    #[test]
    fn low_rate_formula_segments_every_3816_bits() {
        // N_info = 3900: N'_info = 64 · round(3876 / 64) = 3904. With R ≤ 1/4,
        // C = ⌈3928 / 3816⌉ = 2 and TBS = 16 · ⌈3928 / 16⌉ − 24 = 3912; with
        // R > 1/4, C = 1 and TBS = 8 · ⌈3928 / 8⌉ − 24 = 3904.
        let x = 3900u64 << SCALE_LOG2;
        let (n_info_prime, c, t) = step_4(x, CodeRate::from_x2048(512).unwrap());
        assert_eq!((n_info_prime, c, t.get()), (3904, 2, 3912));
        let (n_info_prime, c, t) = step_4(x, CodeRate::from_x2048(513).unwrap());
        assert_eq!((n_info_prime, c, t.get()), (3904, 1, 3904));
    }

    #[test]
    fn base_graph_follows_ts_38_212_section_7_2_2() {
        let rate = |x: u16| CodeRate::from_x2048(x).unwrap();
        let tb = |b: u32| TbsBits(b);
        // A ≤ 292: BG2 at any rate.
        assert_eq!(ldpc_base_graph(tb(292), rate(1896)), LdpcBaseGraph::Bg2);
        assert_eq!(ldpc_base_graph(tb(296), rate(1896)), LdpcBaseGraph::Bg1);
        // A ≤ 3824 and R ≤ 0.67 (0.67 · 2048 = 1372.16).
        assert_eq!(ldpc_base_graph(tb(3824), rate(1372)), LdpcBaseGraph::Bg2);
        assert_eq!(ldpc_base_graph(tb(3824), rate(1373)), LdpcBaseGraph::Bg1);
        assert_eq!(ldpc_base_graph(tb(3840), rate(1372)), LdpcBaseGraph::Bg1);
        // R ≤ 0.25: BG2 at any size.
        assert_eq!(ldpc_base_graph(tb(1_000_000), rate(512)), LdpcBaseGraph::Bg2);
        assert_eq!(ldpc_base_graph(tb(1_000_000), rate(513)), LdpcBaseGraph::Bg1);
    }

    #[test]
    fn segmentation_splits_above_the_maximum_code_block_size() {
        let high = CodeRate::from_x2048(1500).unwrap();
        // BG1: B = A + 24 ≤ 8448 is one block.
        let s = segmentation(TbsBits(8424), high);
        assert_eq!(
            (s.base_graph, s.code_blocks, s.cb_crc_bits, s.b_prime),
            (LdpcBaseGraph::Bg1, 1, 0, 8448)
        );
        let s = segmentation(TbsBits(8456), high);
        assert_eq!((s.code_blocks, s.cb_crc_bits, s.b_prime), (2, 24, 8456 + 24 + 48));
        assert!(s.is_even());
        assert_eq!(s.bits_per_code_block(), 4264);
        // Table-size blocks carry a 16-bit CRC and are one code block.
        let s = segmentation(TbsBits(3824), high);
        assert_eq!((s.tb_crc_bits, s.code_blocks), (16, 1));
    }
}
