//! Intel AMX tile products for the packed dense layers: `tdpbusd` (u8 x i8 -> i32) for
//! [`PackedI8`](crate::kernels::PackedI8) and `tdpbf16ps` (bf16 x bf16 -> f32) for
//! [`PackedBf16`](crate::kernels::PackedBf16).
//!
//! Why: a tile instruction multiplies a `16 x 64`-byte block of inputs by a `16 x 64`-byte block
//! of weights (16 x 16 outputs, 1,024 multiply-adds in int8, 512 in bf16) where `vpdpbusd` does 64.
//! The packed layouts already match the tile's B operand: a panel row of the int8 packing holds 16
//! columns x 4 input rows every 64 bytes, the bf16 packing 16 columns x 2 input rows, so a B tile
//! is 16 panel rows read with the panel's row stride (256 bytes) and nothing is repacked.
//!
//! The instructions are written in `asm!` (the AMX intrinsics and target features are not
//! stable); they need the kernel's permission for the tile state, asked once per process
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`). Where the CPU lacks AMX, the kernel
//! refuses, the shapes do not fit a tile, or `HINDSIGHT_NO_AMX` is set to anything but empty or
//! `0` (A/B runs), callers use the
//! AVX-512 register blocks instead. The int8 sums are exact i32, so this path equals `vpdpbusd`'s
//! to the bit; the bf16 one differs from `vdpbf16ps` by summation order only.

// The unsafe here: the `arch_prctl` system call and the tile instructions, both in `asm!`, after
// `panel_product` has checked every bound the instructions read or write.
#![allow(unsafe_code)]

use std::sync::OnceLock;

/// Bytes in a tile row, the K extent of one tile product (64 int8 or 32 bf16 inputs).
pub(crate) const TILE_BYTES: usize = 64;
/// Rows of a tile: inputs per row block, and the weight panel rows a B tile covers.
pub(crate) const TILE_ROWS: usize = 16;
/// Output columns of one weight panel (four tiles of 16); the packings' panel width.
pub(crate) const PANEL: usize = 64;
/// Bytes between panel rows: `PANEL` columns x 4 bytes.
const PANEL_STRIDE: usize = PANEL * 4;
// The K loop in `tile_kernel!` advances A by one tile row (64 bytes) and B by 16 panel rows
// (4096 bytes) as literals.
const _: () = assert!(TILE_BYTES == 64 && TILE_ROWS * PANEL_STRIDE == 4096);

/// Which tile product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TileOp {
    /// `tdpbusd`: unsigned input bytes times signed weight bytes, i32 sums.
    Int8,
    /// `tdpbf16ps`: bf16 pairs, f32 sums.
    Bf16,
}

/// Whether this process may run `op` (the CPU has it, the kernel granted the tile state, and
/// `HINDSIGHT_NO_AMX` is unset). Decided once.
pub(crate) fn usable(op: TileOp) -> bool {
    static STATE: OnceLock<(bool, bool)> = OnceLock::new();
    let (int8, bf16) = *STATE.get_or_init(detect);
    match op {
        TileOp::Int8 => int8,
        TileOp::Bf16 => bf16,
    }
}

/// A short description of the tile support, for logs and reports: `"AMX int8+bf16"`, or `None`.
pub(crate) fn describe() -> Option<&'static str> {
    match (usable(TileOp::Int8), usable(TileOp::Bf16)) {
        (true, true) => Some("AMX int8+bf16"),
        (true, false) => Some("AMX int8"),
        (false, true) => Some("AMX bf16"),
        (false, false) => None,
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn detect() -> (bool, bool) {
    if std::env::var_os("HINDSIGHT_NO_AMX").is_some_and(|v| !v.is_empty() && v != "0") {
        return (false, false);
    }
    // CPUID leaf 7 sub-leaf 0, EDX: bit 22 AMX-BF16, bit 24 AMX-TILE, bit 25 AMX-INT8.
    let max_leaf = std::arch::x86_64::__cpuid(0).eax;
    if max_leaf < 7 {
        return (false, false);
    }
    let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
    let (bf16, tile, int8) = (edx >> 22 & 1 == 1, edx >> 24 & 1 == 1, edx >> 25 & 1 == 1);
    if !tile || !(int8 || bf16) || !request_tile_state() {
        return (false, false);
    }
    (int8, bf16)
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn detect() -> (bool, bool) {
    (false, false)
}

/// Asks Linux for the AMX tile data state (`arch_prctl(ARCH_REQ_XCOMP_PERM, 18)`); without it
/// the first tile instruction faults. True when granted.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request_tile_state() -> bool {
    const SYS_ARCH_PRCTL: i64 = 158;
    const ARCH_REQ_XCOMP_PERM: i64 = 0x1023;
    const XFEATURE_XTILEDATA: i64 = 18;
    let ret: i64;
    // SAFETY: a plain system call that only changes which register state this process may use;
    // it reads no memory, and the registers the `syscall` instruction clobbers are declared.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") SYS_ARCH_PRCTL => ret,
            in("rdi") ARCH_REQ_XCOMP_PERM,
            in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret == 0
}

/// The 64-byte tile configuration (palette 1): every tile 16 rows of 64 bytes.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

const CONFIG: TileConfig = TileConfig {
    palette: 1,
    start_row: 0,
    reserved: [0; 14],
    colsb: [
        TILE_BYTES as u16,
        64,
        64,
        64,
        64,
        64,
        64,
        64,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ],
    rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
};

/// `out[r][c] = a[r] · panel[.., c]` for every row `r` of `a` and the panel's 64 columns.
///
/// `a` holds `rows` rows of `k_bytes` bytes (inputs as the tile's A operand reads them: four u8
/// codes, or two bf16, per 4 bytes); `rows` is a multiple of 16 and `k_bytes` of 64. `panel` is
/// one packed panel, `k_bytes / 4` rows of 256 bytes. `out` receives `rows x 64` sums (i32
/// converted to f32 for int8, f32 for bf16).
///
/// Panics (before any tile instruction) if the shapes do not hold or `op` is not [`usable`].
pub(crate) fn panel_product(
    op: TileOp,
    a: &[u8],
    rows: usize,
    k_bytes: usize,
    panel: &[u8],
    out: &mut [f32],
) {
    assert!(
        rows.is_multiple_of(TILE_ROWS) && k_bytes.is_multiple_of(TILE_BYTES) && k_bytes > 0,
        "rows {rows} and k_bytes {k_bytes} must be whole tiles"
    );
    let need = |a: usize, b: usize| a.checked_mul(b).expect("tile shape overflows usize");
    assert!(
        a.len() >= need(rows, k_bytes),
        "a holds {} < {rows}x{k_bytes}",
        a.len()
    );
    let panel_bytes = need(k_bytes / 4, PANEL_STRIDE);
    assert!(
        panel.len() >= panel_bytes,
        "panel holds {} < {panel_bytes} bytes",
        panel.len()
    );
    assert!(
        out.len() >= need(rows, PANEL),
        "out holds {} < {rows}x{PANEL}",
        out.len()
    );
    assert!(usable(op), "{op:?} tiles are not usable in this process");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `usable(op)` proved the CPU has the instructions and the kernel granted the tile
    // state. The asserts above bound every tile access: A reads rows `r0..r0 + 16` (< rows) at
    // byte `kc * 64` (< k_bytes) with stride `k_bytes`; B reads panel rows `kc * 16 .. + 16`
    // (< k_bytes / 4) at byte `j * 64` (< 256) with stride 256; C goes to rows `r0..r0 + 16` of
    // `out` (< rows) with stride 256 bytes (64 floats).
    unsafe {
        match op {
            TileOp::Int8 => product_int8(a, rows, k_bytes, panel, out),
            TileOp::Bf16 => product_bf16(a, rows, k_bytes, panel, out),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AMX is x86_64 only");
}

/// One tile product kernel per instruction: the loop is the same, only the multiply differs.
/// Each 16-row block is one self-contained `asm!` block (configure, zero, the K loop, store,
/// release) that declares every tile register it uses as clobbered, so no tile state is carried
/// from one block to the next behind the compiler's back. Sums are stored straight into `out`
/// (16 rows of 64 columns: the tile rows' 256-byte stride).
macro_rules! tile_kernel {
    ($name:ident, $insn:literal) => {
        #[cfg(target_arch = "x86_64")]
        unsafe fn $name(a: &[u8], rows: usize, k_bytes: usize, panel: &[u8], out: &mut [f32]) {
            let chunks = k_bytes / TILE_BYTES;
            for r0 in (0..rows).step_by(TILE_ROWS) {
                // SAFETY: see `panel_product`, which checked every bound: A rows r0..r0 + 16 at
                // bytes 0..k_bytes, B panel rows 0..k_bytes / 4 at bytes 0..256, C rows
                // r0..r0 + 16 of `out`.
                unsafe {
                    std::arch::asm!(
                        "ldtilecfg [{cfg}]",
                        "tilezero tmm0",
                        "tilezero tmm1",
                        "tilezero tmm2",
                        "tilezero tmm3",
                        "2:",
                        "tileloadd tmm4, [{a} + {sa}*1]",
                        "tileloadd tmm5, [{b} + {sb}*1]",
                        "tileloadd tmm6, [{b} + {sb}*1 + 64]",
                        concat!($insn, " tmm0, tmm4, tmm5"),
                        "tileloadd tmm7, [{b} + {sb}*1 + 128]",
                        concat!($insn, " tmm1, tmm4, tmm6"),
                        "tileloadd tmm5, [{b} + {sb}*1 + 192]",
                        concat!($insn, " tmm2, tmm4, tmm7"),
                        concat!($insn, " tmm3, tmm4, tmm5"),
                        "add {a}, 64",
                        "add {b}, 4096",
                        "dec {n}",
                        "jnz 2b",
                        "tilestored [{c} + {sc}*1], tmm0",
                        "tilestored [{c} + {sc}*1 + 64], tmm1",
                        "tilestored [{c} + {sc}*1 + 128], tmm2",
                        "tilestored [{c} + {sc}*1 + 192], tmm3",
                        "tilerelease",
                        cfg = in(reg) &CONFIG,
                        a = inout(reg) a.as_ptr().add(r0 * k_bytes) => _,
                        b = inout(reg) panel.as_ptr() => _,
                        n = inout(reg) chunks => _,
                        sa = in(reg) k_bytes,
                        sb = in(reg) PANEL_STRIDE,
                        c = in(reg) out.as_mut_ptr().add(r0 * PANEL).cast::<u8>(),
                        sc = in(reg) PANEL * 4,
                        out("tmm0") _,
                        out("tmm1") _,
                        out("tmm2") _,
                        out("tmm3") _,
                        out("tmm4") _,
                        out("tmm5") _,
                        out("tmm6") _,
                        out("tmm7") _,
                        options(nostack)
                    );
                }
            }
        }
    };
}

tile_kernel!(tiles_int8, "tdpbusd");
tile_kernel!(tiles_bf16, "tdpbf16ps");

/// `tdpbusd` products: i32 sums, stored as their bits and converted to f32 in place (as
/// `vpdpbusd`'s path converts them, so both give the same f32). Until converted, a slot holds an
/// i32 bit pattern (some are NaN patterns as f32): only `to_bits` reads it.
#[cfg(target_arch = "x86_64")]
unsafe fn product_int8(a: &[u8], rows: usize, k_bytes: usize, panel: &[u8], out: &mut [f32]) {
    // SAFETY: the caller's contract (`panel_product` checked the bounds and `usable`).
    unsafe { tiles_int8(a, rows, k_bytes, panel, out) };
    for v in &mut out[..rows * PANEL] {
        *v = v.to_bits() as i32 as f32;
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn product_bf16(a: &[u8], rows: usize, k_bytes: usize, panel: &[u8], out: &mut [f32]) {
    // SAFETY: the caller's contract (`panel_product` checked the bounds and `usable`).
    unsafe { tiles_bf16(a, rows, k_bytes, panel, out) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// The bounds `panel_product`'s safety rests on are checked before any tile instruction
    /// (and before asking whether tiles are usable, so these run on every host).
    #[test]
    #[should_panic(expected = "whole tiles")]
    fn partial_row_blocks_are_refused() {
        panel_product(
            TileOp::Int8,
            &[0; 15 * 64],
            15,
            64,
            &[0; 16 * 256],
            &mut [0.0; 15 * 64],
        );
    }

    #[test]
    #[should_panic(expected = "panel holds")]
    fn a_short_panel_is_refused() {
        panel_product(
            TileOp::Bf16,
            &[0; 16 * 128],
            16,
            128,
            &[0; 31 * 256],
            &mut [0.0; 16 * 64],
        );
    }

    #[test]
    #[should_panic(expected = "out holds")]
    fn a_short_output_is_refused() {
        panel_product(
            TileOp::Int8,
            &[0; 32 * 64],
            32,
            64,
            &[0; 16 * 256],
            &mut [0.0; 31 * 64],
        );
    }

    #[test]
    fn int8_tiles_equal_the_integer_product() {
        if !usable(TileOp::Int8) {
            eprintln!("SKIPPED: no AMX-INT8 here (or HINDSIGHT_NO_AMX is set)");
            return;
        }
        let (rows, k) = (32, 128);
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        let a: Vec<u8> = (0..rows * k).map(|_| pseudo(&mut seed) as u8).collect();
        // w[kk][c] as the int8 packing lays it out: panel row s, column c, byte j = input 4s + j.
        let w: Vec<i8> = (0..k * PANEL).map(|_| pseudo(&mut seed) as i8).collect();
        let mut panel = vec![0u8; k / 4 * PANEL_STRIDE];
        for kk in 0..k {
            for c in 0..PANEL {
                panel[(kk / 4 * PANEL + c) * 4 + kk % 4] = w[kk * PANEL + c] as u8;
            }
        }
        let mut out = vec![0.0f32; rows * PANEL];
        panel_product(TileOp::Int8, &a, rows, k, &panel, &mut out);
        for r in 0..rows {
            for c in 0..PANEL {
                let want: i32 = (0..k)
                    .map(|kk| i32::from(a[r * k + kk]) * i32::from(w[kk * PANEL + c]))
                    .sum();
                assert_eq!(out[r * PANEL + c], want as f32, "row {r} col {c}");
            }
        }
    }

    #[test]
    fn bf16_tiles_equal_the_float_product() {
        if !usable(TileOp::Bf16) {
            eprintln!("SKIPPED: no AMX-BF16 here (or HINDSIGHT_NO_AMX is set)");
            return;
        }
        let (rows, k) = (16, 96);
        let mut seed = 0x2545_f491_4f6c_dd1d;
        // Values of at most 8 significant bits, exact in bf16, whose products and sums are exact
        // in f32 too: the tile product must then equal the plain one.
        let mut value = || ((pseudo(&mut seed) % 255) as f32 - 127.0) / 16.0;
        let x: Vec<f32> = (0..rows * k).map(|_| value()).collect();
        let w: Vec<f32> = (0..k * PANEL).map(|_| value()).collect();
        let bits = |v: f32| (v.to_bits() >> 16) as u16;
        let a: Vec<u8> = x.iter().flat_map(|&v| bits(v).to_le_bytes()).collect();
        let mut panel = vec![0u8; k / 2 * PANEL_STRIDE];
        for kk in 0..k {
            for c in 0..PANEL {
                let at = ((kk / 2 * PANEL + c) * 2 + kk % 2) * 2;
                panel[at..at + 2].copy_from_slice(&bits(w[kk * PANEL + c]).to_le_bytes());
            }
        }
        let mut out = vec![0.0f32; rows * PANEL];
        panel_product(TileOp::Bf16, &a, rows, k * 2, &panel, &mut out);
        for r in 0..rows {
            for c in 0..PANEL {
                let want: f64 = (0..k)
                    .map(|kk| f64::from(x[r * k + kk]) * f64::from(w[kk * PANEL + c]))
                    .sum();
                let got = f64::from(out[r * PANEL + c]);
                assert_eq!(got, want, "row {r} col {c}");
            }
        }
    }
}
