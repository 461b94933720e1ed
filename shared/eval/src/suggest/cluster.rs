//! Questions nothing answered, grouped by meaning: average-linkage agglomerative
//! clustering on cosine similarity, merged while the closest two groups are at least
//! `min_similarity` apart on average.

use switchyard_vectors::embed::dot;

/// Groups of at least `min_size` of `vectors` (unit vectors), largest first; each group's
/// members in order of closeness to its centroid.
pub fn clusters(vectors: &[Vec<f32>], min_similarity: f32, min_size: usize) -> Vec<Vec<usize>> {
    let n = vectors.len();
    let mut groups: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    // Sum of pairwise similarities between groups a and b (average = sum / (|a|·|b|)).
    let mut between: Vec<Vec<f32>> = (0..n)
        .map(|i| (0..n).map(|j| dot(&vectors[i], &vectors[j])).collect())
        .collect();
    let mut alive: Vec<bool> = vec![true; n];
    loop {
        let mut best: Option<(usize, usize, f32)> = None;
        for a in (0..n).filter(|&a| alive[a]) {
            for b in (a + 1..n).filter(|&b| alive[b]) {
                let average = between[a][b] / (groups[a].len() * groups[b].len()) as f32;
                if average >= min_similarity && best.is_none_or(|(_, _, s)| average > s) {
                    best = Some((a, b, average));
                }
            }
        }
        let Some((a, b, _)) = best else { break };
        let moved = std::mem::take(&mut groups[b]);
        groups[a].extend(moved);
        alive[b] = false;
        let merged: Vec<f32> = (0..n).map(|c| between[a][c] + between[b][c]).collect();
        for (c, sum) in merged.into_iter().enumerate() {
            between[a][c] = sum;
            between[c][a] = sum;
        }
    }
    let mut found: Vec<Vec<usize>> = groups
        .into_iter()
        .zip(alive)
        .filter(|(g, alive)| *alive && g.len() >= min_size)
        .map(|(mut group, _)| {
            let centroid = centroid(vectors, &group);
            group.sort_by(|&x, &y| {
                dot(&vectors[y], &centroid).total_cmp(&dot(&vectors[x], &centroid))
            });
            group
        })
        .collect();
    found.sort_by(|a, b| b.len().cmp(&a.len()).then(a[0].cmp(&b[0])));
    found
}

/// The unit mean of the members' vectors.
pub fn centroid(vectors: &[Vec<f32>], members: &[usize]) -> Vec<f32> {
    let mut sum = vec![0.0f32; vectors.first().map_or(0, Vec::len)];
    for &i in members {
        for (s, v) in sum.iter_mut().zip(&vectors[i]) {
            *s += v;
        }
    }
    let norm = sum
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::EPSILON);
    sum.iter().map(|x| x / norm).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }

    #[test]
    fn near_vectors_group_and_loners_are_left_out() {
        let vectors = vec![
            unit(&[1.0, 0.1, 0.0]),
            unit(&[1.0, 0.0, 0.1]),
            unit(&[0.0, 1.0, 0.1]),
            unit(&[0.9, 0.1, 0.1]),
            unit(&[0.1, 1.0, 0.0]),
            unit(&[0.0, 0.0, 1.0]),
        ];
        let found = clusters(&vectors, 0.8, 2);
        assert_eq!(found.len(), 2, "{found:?}");
        let mut first = found[0].clone();
        first.sort();
        assert_eq!(first, vec![0, 1, 3]);
        let mut second = found[1].clone();
        second.sort();
        assert_eq!(second, vec![2, 4]);
    }
}
