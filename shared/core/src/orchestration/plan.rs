//! Which sub-question waits for which: "then", "after that", "finally" and words that
//! point back ("their", "those") make a task depend on the one before; "and", "also" and
//! commas leave it independent. Dependencies are sorted into phases (Kahn's algorithm):
//! a phase's tasks run together, after every phase before it.

use serde::{Deserialize, Serialize};

use super::split::{tokens, Link};
use super::SubQuestion;
use crate::error::{Result, ServiceError};

/// One sub-question to run on one template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// `t1`, `t2`, … in the order the question asks.
    pub id: String,
    pub question: String,
    pub datasource: String,
    pub template_id: String,
    pub confidence: f32,
    /// Tasks whose results this one needs.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// The tasks of a split question. Parts that do not route to a template are left out (a
/// split is only kept when every part does).
pub fn plan(parts: &[SubQuestion], reference_words: &[String]) -> Vec<Task> {
    let references: Vec<Vec<String>> = reference_words
        .iter()
        .map(|r| r.split_whitespace().map(str::to_lowercase).collect())
        .collect();
    let mut tasks: Vec<Task> = Vec::with_capacity(parts.len());
    for part in parts {
        let Some(best) = part.routing.best() else {
            continue;
        };
        let words: Vec<String> = tokens(&part.text).into_iter().map(|t| t.word).collect();
        let refers_back = references
            .iter()
            .any(|r| !r.is_empty() && words.windows(r.len()).any(|w| w == r.as_slice()));
        let depends_on = match tasks.last() {
            Some(previous) if part.link == Some(Link::Sequential) || refers_back => {
                vec![previous.id.clone()]
            }
            _ => Vec::new(),
        };
        tasks.push(Task {
            id: format!("t{}", tasks.len() + 1),
            question: part.text.clone(),
            datasource: best.datasource.clone(),
            template_id: best.template_id.clone(),
            confidence: best.scores.combined_score,
            depends_on,
        });
    }
    tasks
}

/// Sort `tasks` into phases of task positions. A dependency on an unknown task, a repeated
/// id or a cycle is refused, naming the tasks.
pub fn phases(tasks: &[Task]) -> Result<Vec<Vec<usize>>> {
    let position = |id: &str| tasks.iter().position(|t| t.id == id);
    let mut waiting_on: Vec<usize> = vec![0; tasks.len()];
    let mut unblocks: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    for (i, task) in tasks.iter().enumerate() {
        if position(&task.id) != Some(i) {
            return Err(ServiceError::invalid_request(
                format!("plan.tasks[{i}].id"),
                format!("`{}` is used by more than one task", task.id),
            ));
        }
        for dependency in &task.depends_on {
            let Some(d) = position(dependency) else {
                return Err(ServiceError::invalid_request(
                    format!("plan.tasks[{i}].depends_on"),
                    format!(
                        "task `{}` depends on `{dependency}`, which is not in the plan",
                        task.id
                    ),
                ));
            };
            waiting_on[i] += 1;
            unblocks[d].push(i);
        }
    }
    let mut phases = Vec::new();
    let mut ready: Vec<usize> = (0..tasks.len()).filter(|&i| waiting_on[i] == 0).collect();
    let mut placed = 0;
    while !ready.is_empty() {
        let mut next = Vec::new();
        for &i in &ready {
            for &j in &unblocks[i] {
                waiting_on[j] -= 1;
                if waiting_on[j] == 0 {
                    next.push(j);
                }
            }
        }
        placed += ready.len();
        next.sort_unstable();
        phases.push(std::mem::replace(&mut ready, next));
    }
    if placed < tasks.len() {
        let stuck: Vec<&str> = (0..tasks.len())
            .filter(|&i| waiting_on[i] > 0)
            .map(|i| tasks[i].id.as_str())
            .collect();
        return Err(ServiceError::invalid_request(
            "plan.tasks",
            format!(
                "the dependencies of {} form a cycle",
                stuck
                    .iter()
                    .map(|id| format!("`{id}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(phases)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, depends_on: &[&str]) -> Task {
        Task {
            id: id.into(),
            question: format!("question {id}"),
            datasource: "d".into(),
            template_id: "t".into(),
            confidence: 0.9,
            depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn independent_tasks_share_a_phase_and_dependents_follow() {
        let tasks = [task("t1", &[]), task("t2", &[]), task("t3", &["t1"])];
        assert_eq!(phases(&tasks).unwrap(), vec![vec![0, 1], vec![2]]);
        let chain = [task("t1", &[]), task("t2", &["t1"]), task("t3", &["t2"])];
        assert_eq!(phases(&chain).unwrap(), vec![vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn a_cycle_is_refused_naming_its_tasks() {
        let tasks = [task("t1", &["t2"]), task("t2", &["t1"]), task("t3", &[])];
        let message = phases(&tasks).unwrap_err().to_string();
        assert!(
            message.contains("cycle") && message.contains("`t1`, `t2`"),
            "{message}"
        );
        assert!(!message.contains("t3"), "{message}");
    }

    #[test]
    fn a_dangling_dependency_or_repeated_id_is_refused() {
        let message = phases(&[task("t1", &["t9"])]).unwrap_err().to_string();
        assert!(message.contains("plan.tasks[0].depends_on") && message.contains("t9"));
        let message = phases(&[task("t1", &[]), task("t1", &[])])
            .unwrap_err()
            .to_string();
        assert!(message.contains("plan.tasks[1].id"), "{message}");
    }
}
