//! Posting a pull request's suggested fixes: one review (event `COMMENT`)
//! per head commit, through forge's pull-request calls. Shared by the App
//! (after the sync of a pull request) and `astrolift suggest` (GitHub
//! Actions).
//!
//! Steps, with no request at all when no diagnostic has a fix:
//! 1. list the pull request's files; the lines each `patch` adds are the
//!    lines a suggestion may replace (a file without a patch, binary or too
//!    large, has none);
//! 2. plan ([`crate::suggestions::plan`]): fixes wholly on added lines
//!    become comments, in reviews of at most 50;
//! 3. list the reviews, and post each planned review not already there.
//!
//! Idempotent per head: each review's body carries a hidden marker,
//! `<!-- astrolift:suggestions head=SHA part=I/N -->`, and a review counts
//! as posted when a bot wrote it on that `commit_id` with that marker for
//! part I. A redelivery, a re-run or another job for the same head posts
//! nothing new; a failure half-way is completed by the next attempt.
//! Nothing is ever pushed: a suggestion is applied by a person, with
//! GitHub's "Commit suggestion".

use std::collections::{BTreeMap, BTreeSet};

use astrolift_forge::github::{
    Annotation, CheckRunOutput, GitHubError, Installation, NewReview, RepoPath, Review,
    ReviewComment,
};
use astrolift_manifest::Diagnostic;

use crate::suggestions::{SuggestionComment, added_lines, plan};

/// The hidden marker's start; the rest is `head=SHA part=I/N -->`.
pub const MARKER: &str = "<!-- astrolift:suggestions";

/// The pull request a review goes to: on the base repository, also for
/// a pull request from a fork.
#[derive(Debug, Clone, Copy)]
pub struct PullRequest<'a> {
    pub repo: &'a RepoPath,
    pub number: u64,
    pub head_sha: &'a str,
}

/// What [`post_suggestions`] did.
#[derive(Debug, Default)]
pub struct Posted<'d> {
    /// Diagnostics whose fix is a suggestion on this head, in a review
    /// posted now or before: they need no annotation.
    pub suggested: Vec<&'d Diagnostic>,
    /// Reviews created now.
    pub created: usize,
    /// Reviews of this head found already posted.
    pub found: usize,
}

/// Posts the suggestions of `diagnostics` (found at `pull.head_sha`) on
/// `pull`. `text_of` gives a file's text at the head.
pub async fn post_suggestions<'d>(
    github: &Installation,
    pull: PullRequest<'_>,
    diagnostics: &'d [Diagnostic],
    text_of: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Posted<'d>, GitHubError> {
    if diagnostics.iter().all(|d| d.fix.is_none()) {
        return Ok(Posted::default());
    }
    let files = github.pull_request_files(pull.repo, pull.number).await?;
    let added: BTreeMap<String, BTreeSet<u32>> = files
        .into_iter()
        .filter_map(|file| Some((file.filename, added_lines(&file.patch?))))
        .collect();
    let planned = plan(diagnostics, &added, text_of);
    if planned.reviews.is_empty() {
        return Ok(Posted::default());
    }
    let reviews = github.pull_request_reviews(pull.repo, pull.number).await?;
    let parts = planned.reviews.len();
    let mut posted = Posted {
        suggested: planned.suggested,
        ..Posted::default()
    };
    for (index, comments) in planned.reviews.into_iter().enumerate() {
        let part = index + 1;
        if reviews.iter().any(|r| is_part(r, pull.head_sha, part)) {
            posted.found += 1;
            continue;
        }
        let review = NewReview {
            commit_id: pull.head_sha.to_owned(),
            body: review_body(pull.head_sha, part, parts, comments.len()),
            comments: comments.into_iter().map(comment).collect(),
        };
        github
            .create_review(pull.repo, pull.number, &review)
            .await?;
        posted.created += 1;
    }
    Ok(posted)
}

fn comment(suggestion: SuggestionComment) -> ReviewComment {
    ReviewComment::on_new_lines(
        &suggestion.path,
        suggestion.start_line,
        suggestion.line,
        suggestion.body,
    )
}

fn marker(head_sha: &str, part: usize, parts: usize) -> String {
    format!("{MARKER} head={head_sha} part={part}/{parts} -->")
}

/// True when `review` is part `part` of our suggestions on `head_sha`.
fn is_part(review: &Review, head_sha: &str, part: usize) -> bool {
    let prefix = format!("{MARKER} head={head_sha} part={part}/");
    review.by_a_bot()
        && review.commit_id.as_deref() == Some(head_sha)
        && review.body.as_deref().is_some_and(|b| b.contains(&prefix))
}

fn review_body(head_sha: &str, part: usize, parts: usize, count: usize) -> String {
    let fixes = if count == 1 { "fix" } else { "fixes" };
    let of = if parts > 1 {
        format!(" (part {part} of {parts})")
    } else {
        String::new()
    };
    format!(
        "Astrolift suggests {count} {fixes} for lines this pull request adds{of}. \
         Each comment holds a suggestion: **Commit suggestion** applies it to the branch \
         (Astrolift never pushes).\n\n{}\n",
        marker(head_sha, part, parts)
    )
}

/// Removes from `output` the annotation of each suggested diagnostic (one
/// each): the review comment says the same on the same line.
pub fn drop_suggested_annotations(output: &mut CheckRunOutput, suggested: &[&Diagnostic]) {
    for diagnostic in suggested {
        let Some(wanted) = crate::annotations::annotation_of(diagnostic) else {
            continue;
        };
        let same = |a: &Annotation| {
            a.path == wanted.path
                && (a.start_line, a.end_line) == (wanted.start_line, wanted.end_line)
                && (a.start_column, a.end_column) == (wanted.start_column, wanted.end_column)
                && a.title == wanted.title
                && a.annotation_level == wanted.annotation_level
        };
        if let Some(index) = output.annotations.iter().position(same) {
            output.annotations.remove(index);
        }
    }
}

/// Puts a warning first in the run's text (where trimming never cuts it):
/// the suggestions could not be posted, so every fix stays an annotation.
pub fn warn_not_posted(output: &mut CheckRunOutput, error: &GitHubError) {
    let warning = format!(
        "> [!WARNING]\n> Astrolift could not post its suggested fixes as a pull-request \
         review ({error}). The fixes are annotations of this run instead; re-run the check \
         to try again.\n\n"
    );
    let text = output.text.take().unwrap_or_default();
    output.text = Some(format!("{warning}{text}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use astrolift_forge::github::User;

    const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

    fn review(kind: &str, commit: &str, body: &str) -> Review {
        Review {
            id: 1,
            commit_id: Some(commit.to_owned()),
            body: Some(body.to_owned()),
            user: Some(User {
                login: "x".to_owned(),
                kind: Some(kind.to_owned()),
            }),
            state: None,
        }
    }

    #[test]
    fn only_a_bots_review_of_this_head_and_part_counts() {
        let body = review_body(HEAD, 2, 3, 50);
        assert!(body.contains("(part 2 of 3)"));
        assert!(is_part(&review("Bot", HEAD, &body), HEAD, 2));
        assert!(!is_part(&review("Bot", HEAD, &body), HEAD, 1));
        assert!(!is_part(&review("User", HEAD, &body), HEAD, 2));
        assert!(!is_part(&review("Bot", "other", &body), HEAD, 2));
        let single = review_body(HEAD, 1, 1, 1);
        assert!(single.starts_with("Astrolift suggests 1 fix for lines"));
        assert!(single.contains(&format!("head={HEAD} part=1/1 -->")));
    }
}
