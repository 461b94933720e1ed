//! Training pairs from a catalog's texts: (anchor, positive) of one template, shuffled and
//! cut into batches in which no template appears twice, so that every other pair of a batch
//! is a true negative for the in-batch ranking loss.

/// A small deterministic generator (SplitMix64): the same seed gives the same pairs and
/// batches on every machine.
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// One training pair: two texts of template `group`, by their positions in the groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub group: usize,
    pub anchor: usize,
    pub positive: usize,
}

/// Up to `per_text` pairs for every text of every group with at least two texts, each
/// text the anchor of pairs with other texts of its group (drawn without repeats while
/// they last).
pub fn pairs(group_sizes: &[usize], per_text: usize, rng: &mut SplitMix) -> Vec<Pair> {
    let mut out = Vec::new();
    for (group, &size) in group_sizes.iter().enumerate() {
        if size < 2 {
            continue;
        }
        for anchor in 0..size {
            let mut others: Vec<usize> = (0..size).filter(|&o| o != anchor).collect();
            rng.shuffle(&mut others);
            for &positive in others.iter().cycle().take(per_text) {
                out.push(Pair {
                    group,
                    anchor,
                    positive,
                });
            }
        }
    }
    rng.shuffle(&mut out);
    out
}

/// Batches of `size` pairs with no group twice: each batch takes, in order, the first
/// pairs whose group it lacks; a last batch may be smaller. A batch of one pair has no
/// negative and is dropped.
pub fn batches(mut pending: Vec<Pair>, size: usize) -> Vec<Vec<Pair>> {
    let groups = pending.iter().map(|p| p.group + 1).max().unwrap_or(0);
    let mut in_batch = vec![false; groups];
    let mut out = Vec::new();
    while !pending.is_empty() {
        let mut batch: Vec<Pair> = Vec::with_capacity(size);
        let mut rest = Vec::with_capacity(pending.len());
        for pair in pending {
            if batch.len() < size && !in_batch[pair.group] {
                in_batch[pair.group] = true;
                batch.push(pair);
            } else {
                rest.push(pair);
            }
        }
        for pair in &batch {
            in_batch[pair.group] = false;
        }
        if batch.len() > 1 {
            out.push(batch);
        }
        pending = rest;
    }
    out
}

/// Batches of near templates, so that the in-batch negatives are the rivals a template
/// is confused with: each batch starts from the template with the most pairs left (ties in
/// a random order) and takes the next pair of each template in order of nearness to it
/// (`neighbours[g]` lists every group, nearest to `g` first), no group twice. The batches
/// come out shuffled, so training meets the regions of the catalog in no fixed order.
pub fn nearest_batches(
    pending: Vec<Pair>,
    size: usize,
    neighbours: &[Vec<usize>],
    rng: &mut SplitMix,
) -> Vec<Vec<Pair>> {
    let groups = neighbours.len();
    let mut queues: Vec<std::collections::VecDeque<Pair>> = vec![Default::default(); groups];
    for pair in pending {
        queues[pair.group].push_back(pair);
    }
    let mut tie_rank: Vec<usize> = (0..groups).collect();
    rng.shuffle(&mut tie_rank);
    let mut out = Vec::new();
    while let Some(seed) = (0..groups)
        .filter(|&g| !queues[g].is_empty())
        .max_by_key(|&g| (queues[g].len(), std::cmp::Reverse(tie_rank[g])))
    {
        let mut batch = Vec::with_capacity(size);
        for &g in &neighbours[seed] {
            if batch.len() == size {
                break;
            }
            if let Some(pair) = queues[g].pop_front() {
                batch.push(pair);
            }
        }
        if batch.len() > 1 {
            out.push(batch);
        }
    }
    rng.shuffle(&mut out);
    out
}

/// Batches for an incremental run, which trains only what a few changed templates need:
/// each text of a `changed` group anchors `per_text` pairs, and each such pair's batch is
/// filled with one random pair of each of the group's nearest other templates (its
/// rivals, as in [`nearest_batches`]), so the changed template is pulled together and
/// pushed from exactly the templates it could be confused with.
pub fn incremental_batches(
    group_sizes: &[usize],
    changed: &[usize],
    per_text: usize,
    size: usize,
    neighbours: &[Vec<usize>],
    rng: &mut SplitMix,
) -> Vec<Vec<Pair>> {
    let random_pair = |group: usize, rng: &mut SplitMix| {
        let n = group_sizes[group];
        let anchor = rng.below(n);
        let positive = (anchor + 1 + rng.below(n - 1)) % n;
        Pair {
            group,
            anchor,
            positive,
        }
    };
    let mut out = Vec::new();
    for &group in changed {
        if group_sizes[group] < 2 {
            continue;
        }
        let own = pairs(
            &group_sizes
                .iter()
                .enumerate()
                .map(|(g, &n)| if g == group { n } else { 0 })
                .collect::<Vec<_>>(),
            per_text,
            rng,
        );
        for pair in own {
            let mut batch = vec![pair];
            for &rival in &neighbours[group] {
                if batch.len() == size {
                    break;
                }
                if rival != group && group_sizes[rival] >= 2 {
                    batch.push(random_pair(rival, rng));
                }
            }
            if batch.len() > 1 {
                out.push(batch);
            }
        }
    }
    rng.shuffle(&mut out);
    out
}

/// Every group's other groups in order of cosine similarity of their centroids (`vectors`
/// are one group's L2-normalised text vectors each), the group itself first.
pub fn neighbours(vectors: &[Vec<Vec<f32>>]) -> Vec<Vec<usize>> {
    let centroids: Vec<Vec<f32>> = vectors
        .iter()
        .map(|group| {
            let width = group.first().map_or(0, Vec::len);
            let mut sum = vec![0f32; width];
            for v in group {
                for (s, x) in sum.iter_mut().zip(v) {
                    *s += x;
                }
            }
            let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            sum.iter().map(|x| x / norm).collect()
        })
        .collect();
    (0..centroids.len())
        .map(|g| {
            let mut order: Vec<(usize, f32)> = centroids
                .iter()
                .enumerate()
                .map(|(o, c)| {
                    let cosine = if o == g {
                        f32::INFINITY
                    } else {
                        c.iter().zip(&centroids[g]).map(|(a, b)| a * b).sum()
                    };
                    (o, cosine)
                })
                .collect();
            // Ties by index, so that the order is the same on every machine.
            order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            order.into_iter().map(|(o, _)| o).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_never_hold_a_group_twice_and_keep_every_pair() {
        let mut rng = SplitMix::new(7);
        let all = pairs(&[10, 10, 3, 1, 5], 4, &mut rng);
        assert_eq!(all.len(), (10 + 10 + 3 + 5) * 4);
        assert!(all.iter().all(|p| p.anchor != p.positive && p.group != 3));
        let cut = batches(all.clone(), 3);
        // Only pairs left alone at the end (one group remaining) are dropped.
        let kept = cut.iter().map(Vec::len).sum::<usize>();
        assert!(
            kept <= all.len() && kept + 40 >= all.len(),
            "{kept} of {}",
            all.len()
        );
        assert!(cut.iter().all(|b| b.len() > 1));
        for batch in &cut {
            let mut groups: Vec<usize> = batch.iter().map(|p| p.group).collect();
            groups.sort_unstable();
            groups.dedup();
            assert_eq!(groups.len(), batch.len());
        }
    }

    #[test]
    fn nearest_batches_gather_near_groups_and_keep_every_pair() {
        let mut rng = SplitMix::new(3);
        let all = pairs(&[4, 4, 4, 4, 4, 4], 2, &mut rng);
        // Groups 0-2 lie along one axis, 3-5 along another.
        let along = |axis: usize, tilt: f32| {
            let mut v = [0.0f32; 3];
            v[axis] = 1.0;
            v[2] = tilt;
            let n = (1.0 + tilt * tilt).sqrt();
            vec![v.iter().map(|x| x / n).collect::<Vec<f32>>()]
        };
        let vectors = vec![
            along(0, 0.0),
            along(0, 0.1),
            along(0, 0.2),
            along(1, 0.0),
            along(1, 0.1),
            along(1, 0.2),
        ];
        let near = neighbours(&vectors);
        assert_eq!(near[0][0], 0);
        assert!(near[0][..3].iter().all(|&g| g < 3), "{:?}", near[0]);
        let cut = nearest_batches(all.clone(), 3, &near, &mut rng);
        assert_eq!(cut.iter().map(Vec::len).sum::<usize>(), all.len());
        for batch in &cut {
            let side = batch[0].group < 3;
            assert!(batch.iter().all(|p| (p.group < 3) == side), "{batch:?}");
            let mut groups: Vec<usize> = batch.iter().map(|p| p.group).collect();
            groups.sort_unstable();
            groups.dedup();
            assert_eq!(groups.len(), batch.len());
        }
    }

    #[test]
    fn incremental_batches_train_the_changed_group_against_its_rivals() {
        let sizes = [4, 4, 1, 4, 4];
        // Group 1's nearest: 0, then 2 (one text: no pair), then 3, then 4.
        let near = vec![
            vec![0, 1, 2, 3, 4],
            vec![1, 0, 2, 3, 4],
            vec![2, 0, 1, 3, 4],
            vec![3, 4, 0, 1, 2],
            vec![4, 3, 0, 1, 2],
        ];
        let cut = incremental_batches(&sizes, &[1], 2, 3, &near, &mut SplitMix::new(5));
        assert_eq!(cut.len(), 4 * 2, "every text of group 1 anchors 2 pairs");
        for batch in &cut {
            let groups: Vec<usize> = batch.iter().map(|p| p.group).collect();
            assert_eq!(groups, vec![1, 0, 3], "{batch:?}");
            assert!(batch
                .iter()
                .all(|p| p.anchor != p.positive && p.positive < sizes[p.group]));
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_pairs() {
        let a = pairs(&[4, 6, 2], 3, &mut SplitMix::new(1));
        let b = pairs(&[4, 6, 2], 3, &mut SplitMix::new(1));
        let c = pairs(&[4, 6, 2], 3, &mut SplitMix::new(2));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
