//! The Reno building blocks shared by every algorithm, as Linux keeps them
//! once in `net/ipv4/tcp_cong.c` (`tcp_slow_start`, `tcp_cong_avoid_ai`,
//! `tcp_reno_cong_avoid`, `tcp_reno_ssthresh`).

use super::{ConnView, Window};

/// Linux `tcp_slow_start`: grow by one segment per acknowledged segment, up
/// to `ssthresh`. Returns the acknowledged segments left over once the
/// threshold is reached (to be spent in congestion avoidance).
pub fn slow_start(w: &mut Window, acked: u32) -> u32 {
    let cwnd = w.cwnd.saturating_add(acked).min(w.ssthresh);
    let left = acked - (cwnd.saturating_sub(w.cwnd)).min(acked);
    w.cwnd = cwnd.min(w.cwnd_clamp);
    left
}

/// Linux `tcp_cong_avoid_ai`: grow by one segment after `wnd` segments
/// have been acknowledged (so by 1/`wnd` per ACKed segment).
pub fn cong_avoid_ai(w: &mut Window, wnd: u32, acked: u32) {
    let wnd = wnd.max(1);
    // If credits accumulated at a higher w, apply them gently now.
    if w.cwnd_cnt >= wnd {
        w.cwnd_cnt = 0;
        w.cwnd += 1;
    }
    w.cwnd_cnt += acked;
    if w.cwnd_cnt >= wnd {
        let delta = w.cwnd_cnt / wnd;
        w.cwnd_cnt -= delta * wnd;
        w.cwnd += delta;
    }
    w.cwnd = w.cwnd.min(w.cwnd_clamp);
}

/// Linux `tcp_reno_cong_avoid`: slow start below `ssthresh`, then one
/// segment per window; nothing when the application, not the window, limits
/// sending.
pub fn reno_cong_avoid(w: &mut Window, c: &ConnView, acked: u32) {
    if !c.is_cwnd_limited {
        return;
    }
    let mut acked = acked;
    if w.in_slow_start() {
        acked = slow_start(w, acked);
        if acked == 0 {
            return;
        }
    }
    let cwnd = w.cwnd;
    cong_avoid_ai(w, cwnd, acked);
}

/// Linux `tcp_reno_ssthresh`: half the window, at least two segments.
pub fn reno_ssthresh(w: &Window) -> u32 {
    (w.cwnd >> 1).max(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_the_rest() {
        let mut w = Window::new(10);
        w.ssthresh = 12;
        assert_eq!(slow_start(&mut w, 5), 3);
        assert_eq!(w.cwnd, 12);
    }

    #[test]
    fn additive_increase_adds_one_segment_per_window_of_acks() {
        let mut w = Window::new(10);
        w.ssthresh = 5;
        for _ in 0..9 {
            cong_avoid_ai(&mut w, 10, 1);
        }
        assert_eq!(w.cwnd, 10);
        cong_avoid_ai(&mut w, 10, 1);
        assert_eq!(w.cwnd, 11);
        assert_eq!(w.cwnd_cnt, 0);
    }

    #[test]
    fn a_stretch_ack_counts_every_segment_it_covers() {
        let mut w = Window::new(10);
        cong_avoid_ai(&mut w, 10, 25);
        assert_eq!((w.cwnd, w.cwnd_cnt), (12, 5));
    }

    #[test]
    fn reno_halves_the_window_but_keeps_two_segments() {
        let mut w = Window::new(21);
        assert_eq!(reno_ssthresh(&w), 10);
        w.cwnd = 3;
        assert_eq!(reno_ssthresh(&w), 2);
    }
}
