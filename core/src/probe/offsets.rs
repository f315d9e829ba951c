//! Where each I/O lands in the scratch file.
//!
//! Every offset is a multiple of the block size: O_DIRECT requires it, and
//! unaligned offsets would make one logical I/O touch two device blocks,
//! which measures something other than what was asked for.
//!
//! All functions are total: degenerate inputs (zero sizes, more workers than
//! blocks) give offset 0 or empty regions rather than a panic; the engine
//! validates specs so those cases never reach the I/O loop.

/// A half-open byte range `[start, end)` of the scratch file, both ends
/// multiples of the block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
}

impl Region {
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A uniformly random block-aligned offset `o` with `o + block_size <=
/// file_size`, i.e. over the whole file. Returns 0 if not even one block fits.
pub fn random_offset(rng: &mut fastrand::Rng, file_size: u64, block_size: u64) -> u64 {
    let slots = file_size.checked_div(block_size).unwrap_or(0);
    if slots == 0 {
        return 0;
    }
    rng.u64(0..slots) * block_size
}

/// The part of the file that worker `index` of `workers` walks through in
/// the sequential workloads: `[index*file_size/workers, (index+1)*file_size/
/// workers)`, both ends rounded down to the block size.
///
/// Separate regions keep sequential workers from turning into one
/// interleaved stream (which the device would see as random-ish I/O) and
/// from overwriting each other's blocks. With `file_size >= block_size *
/// workers` every region holds at least one block; regions never overlap
/// and together cover the file up to its last whole block.
pub fn worker_region(file_size: u64, block_size: u64, workers: usize, index: usize) -> Region {
    if workers == 0 || block_size == 0 || index >= workers {
        return Region { start: 0, end: 0 };
    }
    // u128 because index * file_size overflows u64 for multi-EiB files.
    let boundary = |i: usize| -> u64 {
        let raw = (i as u128 * file_size as u128 / workers as u128) as u64;
        raw - raw % block_size
    };
    Region {
        start: boundary(index),
        end: boundary(index + 1),
    }
}

/// Walks a region one block at a time, wrapping back to its start.
#[derive(Debug, Clone)]
pub struct SeqCursor {
    region: Region,
    block_size: u64,
    next: u64,
}

impl SeqCursor {
    pub fn new(region: Region, block_size: u64) -> SeqCursor {
        SeqCursor {
            region,
            block_size,
            next: region.start,
        }
    }

    /// The offset for the next I/O. If the region holds no whole block it
    /// keeps returning the region start (the engine never lets that happen).
    pub fn next_offset(&mut self) -> u64 {
        let fits = |o: u64| {
            o.checked_add(self.block_size)
                .is_some_and(|e| e <= self.region.end)
        };
        if !fits(self.next) {
            self.next = self.region.start;
        }
        let offset = self.next;
        self.next = offset.saturating_add(self.block_size);
        offset
    }

    /// Starts over at the region start, as pg_test_fsync does with an
    /// lseek(0) before each group of writes: every commit then rewrites the
    /// same blocks, which is what a WAL page being re-flushed looks like.
    pub fn rewind(&mut self) {
        self.next = self.region.start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_offsets_are_aligned_in_bounds_and_reach_every_block() {
        let mut rng = fastrand::Rng::with_seed(1);
        for (file_size, bs) in [(64 * 1024, 8192), (64 * 1024 + 100, 8192), (8192, 8192)] {
            let slots = file_size / bs;
            let mut seen = vec![false; slots as usize];
            for _ in 0..10_000 {
                let o = random_offset(&mut rng, file_size, bs);
                assert_eq!(o % bs, 0, "unaligned {o}");
                assert!(o + bs <= file_size, "{o} + {bs} past {file_size}");
                seen[(o / bs) as usize] = true;
            }
            assert!(seen.iter().all(|&s| s), "some block never chosen: {seen:?}");
        }
    }

    #[test]
    fn random_offsets_are_roughly_uniform() {
        let mut rng = fastrand::Rng::with_seed(2);
        let mut counts = [0u32; 16];
        for _ in 0..160_000 {
            counts[(random_offset(&mut rng, 16 * 4096, 4096) / 4096) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn random_offset_degenerate_inputs_do_not_panic() {
        let mut rng = fastrand::Rng::with_seed(3);
        assert_eq!(random_offset(&mut rng, 100, 8192), 0);
        assert_eq!(random_offset(&mut rng, 0, 8192), 0);
        assert_eq!(random_offset(&mut rng, 8192, 0), 0);
    }

    #[test]
    fn worker_regions_tile_the_file_on_block_boundaries() {
        for (file_size, bs, workers) in [
            (16 << 20, 8192, 4),
            (16 << 20, 8192, 3),
            (10 * 8192 + 77, 8192, 7),
            (4 * 4096, 4096, 4),
            (1 << 20, 512, 1),
        ] {
            let regions: Vec<Region> = (0..workers)
                .map(|i| worker_region(file_size, bs, workers, i))
                .collect();
            assert_eq!(regions[0].start, 0);
            assert_eq!(regions[workers - 1].end, file_size - file_size % bs);
            for (i, r) in regions.iter().enumerate() {
                assert_eq!(r.start % bs, 0, "{r:?}");
                assert_eq!(r.end % bs, 0, "{r:?}");
                assert!(r.len() >= bs, "worker {i} got {r:?}");
                if i > 0 {
                    assert_eq!(regions[i - 1].end, r.start, "gap or overlap");
                }
            }
        }
    }

    #[test]
    fn worker_regions_split_evenly_when_they_can() {
        let r = worker_region(16 << 20, 8192, 4, 2);
        assert_eq!(
            r,
            Region {
                start: 8 << 20,
                end: 12 << 20
            }
        );
    }

    #[test]
    fn worker_region_degenerate_inputs_are_empty() {
        assert!(worker_region(1 << 20, 8192, 0, 0).is_empty());
        assert!(worker_region(1 << 20, 8192, 2, 2).is_empty());
        assert!(worker_region(1 << 20, 0, 2, 0).is_empty());
        // Huge files must not overflow the multiplication.
        let r = worker_region(u64::MAX, 4096, 3, 2);
        assert!(r.start < r.end && r.end.is_multiple_of(4096));
    }

    #[test]
    fn cursor_walks_the_region_and_wraps() {
        let region = Region {
            start: 8192,
            end: 4 * 8192,
        };
        let mut c = SeqCursor::new(region, 8192);
        let got: Vec<u64> = (0..7).map(|_| c.next_offset()).collect();
        assert_eq!(got, [8192, 16384, 24576, 8192, 16384, 24576, 8192]);
    }

    #[test]
    fn cursor_rewind_restarts_at_region_start() {
        let region = Region {
            start: 4096,
            end: 10 * 4096,
        };
        let mut c = SeqCursor::new(region, 4096);
        for _ in 0..3 {
            assert_eq!(c.next_offset(), 4096);
            assert_eq!(c.next_offset(), 8192);
            c.rewind();
        }
    }

    #[test]
    fn cursor_ignores_a_partial_tail_block() {
        // A region whose end is not block-aligned never yields a block that
        // would run past it.
        let region = Region {
            start: 0,
            end: 2 * 8192 + 100,
        };
        let mut c = SeqCursor::new(region, 8192);
        let got: Vec<u64> = (0..4).map(|_| c.next_offset()).collect();
        assert_eq!(got, [0, 8192, 0, 8192]);
    }
}
