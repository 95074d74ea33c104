//! Fitting a long conversation into the model's context: the oldest tool results are dropped
//! first (replaced by a note naming the tool and their size), then the oldest whole exchanges.
//!
//! [`trim`] keeps, whatever the budget:
//! - the first user message (what the session is about);
//! - the latest user message and everything after it, whole (the turn in progress);
//! - every tool call with its result and every result with its call: an assistant turn and its
//!   results are dropped together or not at all.
//!
//! In that frame, until the conversation fits `budget_tokens`:
//! 1. the content of tool results, oldest first, is replaced by
//!    `[result of <tool> dropped to fit the context: N tokens]` (N: what it was), except the
//!    results of the last assistant turn, which the model has not read yet;
//! 2. then the oldest messages between the first user message and the latest one are dropped:
//!    each user message alone, each assistant turn with its results;
//! 3. then, as a last resort, the results of the last assistant turn are replaced like in 1,
//!    oldest first (a request that does not fit fails anyway).
//!
//! What stays may still be over the budget (a huge latest prompt); [`Trimmed::tokens`] says.
//!
//! Counting is approximate by design: the caller's `count` measures each text (the agent uses
//! `toolgate_llm::tokens::Encoding::O200kBase`, close enough for other vendors' tokenizers to
//! leave a margin for), plus [`MESSAGE_OVERHEAD`] per message and per tool call for the wire
//! format's framing, and [`IMAGE_TOKENS`] per image. Opaque reasoning (signatures, encrypted
//! items) is counted as its JSON text, which over-counts it.

use toolgate_llm::chat::{Message, Part, ToolResult};

/// Tokens counted per message and per tool call for the framing around their text.
pub const MESSAGE_OVERHEAD: usize = 4;

/// Tokens counted per image (providers bill images by size; this is a middle value).
pub const IMAGE_TOKENS: usize = 1_000;

/// The outcome of [`trim`].
#[derive(Debug, Clone, PartialEq)]
pub struct Trimmed {
    /// The conversation to send.
    pub messages: Vec<Message>,
    /// Its size as counted.
    pub tokens: usize,
    /// How many of the tool results sent were replaced by a note.
    pub results_dropped: usize,
    /// How many messages were left out.
    pub messages_dropped: usize,
}

impl Trimmed {
    /// Whether anything was changed.
    pub fn changed(&self) -> bool {
        self.results_dropped + self.messages_dropped > 0
    }
}

/// The size of `messages` as [`trim`] counts it.
pub fn estimate(messages: &[Message], count: impl Fn(&str) -> usize) -> usize {
    messages.iter().map(|message| message_tokens(message, &count)).sum()
}

/// The size of one message as [`trim`] counts it.
pub fn message_tokens(message: &Message, count: &impl Fn(&str) -> usize) -> usize {
    MESSAGE_OVERHEAD
        + match message {
            Message::User { content } => parts_tokens(content, count),
            Message::Assistant(turn) => {
                count(&turn.text)
                    + turn.reasoning.as_ref().map_or(0, |reasoning| {
                        count(&reasoning.text)
                            + reasoning
                                .opaque
                                .as_ref()
                                .map_or(0, |opaque| count(&opaque.to_string()))
                    })
                    + turn
                        .tool_calls
                        .iter()
                        .map(|call| {
                            MESSAGE_OVERHEAD
                                + count(&call.id)
                                + count(&call.name)
                                + count(&call.arguments)
                        })
                        .sum::<usize>()
            }
            Message::ToolResult(result) => {
                count(&result.call_id) + count(&result.name) + parts_tokens(&result.content, count)
            }
        }
}

fn parts_tokens(parts: &[Part], count: &impl Fn(&str) -> usize) -> usize {
    parts
        .iter()
        .map(|part| match part {
            Part::Text { text } => count(text),
            Part::Image { .. } => IMAGE_TOKENS,
        })
        .sum()
}

/// The note that replaces a dropped result.
pub fn dropped_note(tool: &str, tokens: usize) -> String {
    format!("[result of {tool} dropped to fit the context: {tokens} tokens]")
}

/// `messages` fitted to `budget_tokens` as described in the module doc.
pub fn trim(messages: &[Message], budget_tokens: usize, count: impl Fn(&str) -> usize) -> Trimmed {
    let mut messages = messages.to_vec();
    let sizes: Vec<usize> = messages.iter().map(|m| message_tokens(m, &count)).collect();
    let total: usize = sizes.iter().sum();
    let first_user = messages.iter().position(|m| matches!(m, Message::User { .. }));
    let latest_user = messages.iter().rposition(|m| matches!(m, Message::User { .. }));
    // The results of the last assistant turn, which the model has not read yet.
    let last_turn_results = match messages.iter().rposition(|m| matches!(m, Message::Assistant(_)))
    {
        Some(at) => at + 1..messages.len(),
        None => messages.len()..messages.len(),
    };

    let mut sizes = Sizes {
        sizes,
        total,
        keep: vec![true; messages.len()],
        replaced: vec![false; messages.len()],
    };

    // 1. Older results, oldest first.
    let older: Vec<usize> =
        (0..messages.len()).filter(|i| !last_turn_results.contains(i)).collect();
    drop_results(&mut messages, &mut sizes, &older, budget_tokens, &count);

    // 2. Whole messages between the first user message and the latest one.
    if sizes.total > budget_tokens {
        let start = first_user.map_or(0, |at| at + 1);
        let end = latest_user.filter(|&at| at >= start).unwrap_or(start);
        let mut at = start;
        while at < end && sizes.total > budget_tokens {
            // A unit: a user message alone, or an assistant turn with the results after it.
            let mut next = at + 1;
            if matches!(messages[at], Message::Assistant(_)) {
                while next < messages.len() && matches!(messages[next], Message::ToolResult(_)) {
                    next += 1;
                }
            }
            for index in at..next {
                sizes.keep[index] = false;
                sizes.total -= sizes.sizes[index];
            }
            at = next;
        }
    }

    // 3. The last turn's results.
    let last: Vec<usize> = last_turn_results.collect();
    drop_results(&mut messages, &mut sizes, &last, budget_tokens, &count);

    let kept = |flags: &[bool]| {
        flags.iter().zip(&sizes.keep).filter(|(flag, keep)| **flag && **keep).count()
    };
    Trimmed {
        results_dropped: kept(&sizes.replaced),
        messages_dropped: sizes.keep.iter().filter(|keep| !**keep).count(),
        tokens: sizes.total,
        messages: messages
            .into_iter()
            .zip(&sizes.keep)
            .filter_map(|(message, keep)| keep.then_some(message))
            .collect(),
    }
}

/// The size of each message, the total of those kept, which are kept, which were replaced.
struct Sizes {
    sizes: Vec<usize>,
    total: usize,
    keep: Vec<bool>,
    replaced: Vec<bool>,
}

/// Replaces the content of the results at `indices`, in order, until `total` fits.
fn drop_results(
    messages: &mut [Message],
    sizes: &mut Sizes,
    indices: &[usize],
    budget: usize,
    count: &impl Fn(&str) -> usize,
) {
    for &index in indices {
        if sizes.total <= budget {
            return;
        }
        if !sizes.keep[index] {
            continue;
        }
        let Message::ToolResult(result) = &messages[index] else {
            continue;
        };
        let content_tokens = parts_tokens(&result.content, count);
        let note = dropped_note(&result.name, content_tokens);
        let replaced = Message::ToolResult(ToolResult {
            content: vec![Part::Text { text: note }],
            ..result.clone()
        });
        let size = message_tokens(&replaced, count);
        if size >= sizes.sizes[index] {
            // Already small: a note would not save anything.
            continue;
        }
        sizes.total = sizes.total - sizes.sizes[index] + size;
        sizes.sizes[index] = size;
        sizes.replaced[index] = true;
        messages[index] = replaced;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_llm::chat::{AssistantTurn, ToolCall};

    /// One token per word: easy to reason about.
    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    fn user(text: &str) -> Message {
        Message::user_text(text)
    }

    fn assistant(text: &str, calls: &[(&str, &str)]) -> Message {
        Message::Assistant(AssistantTurn {
            text: text.into(),
            reasoning: None,
            tool_calls: calls
                .iter()
                .map(|(id, name)| ToolCall {
                    id: (*id).into(),
                    name: (*name).into(),
                    arguments: String::new(),
                })
                .collect(),
        })
    }

    fn result(id: &str, name: &str, text: &str) -> Message {
        Message::ToolResult(ToolResult {
            call_id: id.into(),
            name: name.into(),
            content: vec![Part::text(text)],
            is_error: false,
        })
    }

    fn text_of(message: &Message) -> String {
        match message {
            Message::User { content } | Message::ToolResult(ToolResult { content, .. }) => content
                .iter()
                .map(|part| match part {
                    Part::Text { text } => text.clone(),
                    Part::Image { .. } => "<image>".into(),
                })
                .collect(),
            Message::Assistant(turn) => turn.text.clone(),
        }
    }

    fn big(n: usize) -> String {
        vec!["w"; n].join(" ")
    }

    /// Every call answered right after its turn, every result after its call.
    fn assert_paired(messages: &[Message]) {
        let mut pending: Vec<String> = Vec::new();
        for message in messages {
            match message {
                Message::ToolResult(result) => {
                    let at = pending.iter().position(|id| *id == result.call_id);
                    assert!(
                        at.is_some(),
                        "result {} without its call in {messages:#?}",
                        result.call_id
                    );
                    pending.remove(at.expect("checked"));
                }
                other => {
                    assert!(
                        pending.is_empty(),
                        "calls {pending:?} without results in {messages:#?}"
                    );
                    if let Message::Assistant(turn) = other {
                        pending = turn.tool_calls.iter().map(|c| c.id.clone()).collect();
                    }
                }
            }
        }
    }

    fn conversation() -> Vec<Message> {
        vec![
            user("first question"),
            assistant("", &[("c1", "fs__read"), ("c2", "fs__list")]),
            result("c1", "fs__read", &big(100)),
            result("c2", "fs__list", &big(50)),
            assistant("answer one", &[]),
            user("second question"),
            assistant("", &[("c3", "fs__read")]),
            result("c3", "fs__read", &big(80)),
            assistant("answer two", &[]),
            user("third question"),
            assistant("", &[("c4", "fs__grep")]),
            result("c4", "fs__grep", &big(30)),
        ]
    }

    #[test]
    fn what_fits_is_left_alone() {
        let messages = conversation();
        let size = estimate(&messages, words);
        let trimmed = trim(&messages, size, words);
        assert_eq!(trimmed.messages, messages);
        assert_eq!(trimmed.tokens, size);
        assert!(!trimmed.changed());
    }

    #[test]
    fn the_oldest_results_are_dropped_first_one_by_one() {
        let messages = conversation();
        let size = estimate(&messages, words);
        // Dropping c1 (100 words → a 10-word note) is enough.
        let trimmed = trim(&messages, size - 50, words);
        assert_eq!(trimmed.results_dropped, 1);
        assert_eq!(trimmed.messages_dropped, 0);
        assert_eq!(
            text_of(&trimmed.messages[2]),
            "[result of fs__read dropped to fit the context: 100 tokens]"
        );
        assert_eq!(trimmed.messages[3], messages[3]);
        assert_eq!(trimmed.messages[7], messages[7]);
        assert!(trimmed.tokens <= size - 50);
        assert_eq!(trimmed.tokens, estimate(&trimmed.messages, words));

        // More: c2, then c3; never c4 (the turn in progress) while older ones remain.
        let trimmed = trim(&messages, size - 170, words);
        assert_eq!(trimmed.results_dropped, 3, "{:#?}", trimmed.messages);
        assert_eq!(
            text_of(&trimmed.messages[3]),
            "[result of fs__list dropped to fit the context: 50 tokens]"
        );
        assert_eq!(
            text_of(&trimmed.messages[7]),
            "[result of fs__read dropped to fit the context: 80 tokens]"
        );
        assert_eq!(trimmed.messages[11], messages[11]);
        assert_eq!(trimmed.messages.len(), messages.len());
        let Message::ToolResult(kept) = &trimmed.messages[2] else { panic!("a result") };
        assert_eq!(kept.call_id, "c1");
        assert!(!kept.is_error);
    }

    #[test]
    fn then_whole_exchanges_go_oldest_first_keeping_the_first_and_latest_prompts() {
        let messages = conversation();
        let after_notes = {
            let all_notes = trim(&messages, 0, words);
            // With a budget of nothing, everything droppable went.
            assert_eq!(
                all_notes.messages.iter().map(text_of).collect::<Vec<_>>(),
                vec![
                    "first question".to_string(),
                    "third question".into(),
                    String::new(),
                    "[result of fs__grep dropped to fit the context: 30 tokens]".into(),
                ]
            );
            assert_paired(&all_notes.messages);
            assert_eq!(all_notes.messages_dropped, 8);
            // c1, c2 and c3 were replaced, then left out with their exchanges: only c4 counts.
            assert_eq!(all_notes.results_dropped, 1);
            all_notes.tokens
        };
        assert!(after_notes > 0);

        // A budget that needs the first exchange (turn c1+c2 and "answer one") gone, no more.
        let notes_only = trim(&messages, usize::MAX, words);
        assert_eq!(notes_only.messages, messages);
        let all_three_notes = {
            let size = estimate(&messages, words);
            trim(&messages, size - 200, words)
        };
        assert_eq!(all_three_notes.results_dropped, 3);
        assert_eq!(all_three_notes.messages_dropped, 0);
        let budget = all_three_notes.tokens - 1;
        let trimmed = trim(&messages, budget, words);
        assert!(trimmed.tokens <= budget);
        assert_eq!(trimmed.messages_dropped, 3, "{:#?}", trimmed.messages);
        assert_eq!(text_of(&trimmed.messages[0]), "first question");
        assert_eq!(text_of(&trimmed.messages[1]), "answer one");
        assert_eq!(text_of(&trimmed.messages[2]), "second question");
        assert_paired(&trimmed.messages);
        // The turn in progress is whole.
        assert_eq!(trimmed.messages[trimmed.messages.len() - 1], messages[11]);
    }

    #[test]
    fn the_latest_prompt_is_never_split_from_what_follows() {
        // One question, a long run of tool turns after it: nothing after it can go; only
        // results are dropped, the older turns' first.
        let mut messages = vec![user("intro"), assistant("ok", &[]), user("do it")];
        for n in 0..5 {
            let id = format!("c{n}");
            messages.push(assistant("", &[(&id, "t")]));
            messages.push(result(&id, "t", &big(40)));
        }
        let trimmed = trim(&messages, 0, words);
        assert_eq!(trimmed.messages_dropped, 1, "only 'ok' between the first and latest prompt");
        assert_eq!(trimmed.messages.len(), messages.len() - 1);
        assert_eq!(trimmed.results_dropped, 5);
        assert_paired(&trimmed.messages);

        // With room for the last result, it is the one kept.
        let size = estimate(&messages, words);
        let trimmed = trim(&messages, size - 4 * 30, words);
        assert_eq!(trimmed.results_dropped, 4);
        assert_eq!(trimmed.messages.last(), messages.last());
    }

    #[test]
    fn small_results_are_not_replaced_by_longer_notes() {
        let messages = vec![
            user("q"),
            assistant("", &[("c1", "t")]),
            result("c1", "t", "tiny"),
            assistant("done", &[]),
            user("next"),
        ];
        let trimmed = trim(&messages, 0, words);
        assert_eq!(trimmed.results_dropped, 0);
        assert_eq!(trimmed.messages.iter().map(text_of).collect::<Vec<_>>(), vec!["q", "next"]);
    }

    #[test]
    fn images_and_calls_count() {
        let image = Message::User {
            content: vec![Part::Image { mime_type: "image/png".into(), data: "AAAA".into() }],
        };
        assert_eq!(estimate(&[image], words), MESSAGE_OVERHEAD + IMAGE_TOKENS);
        let call = assistant("a b", &[("id", "name")]);
        assert_eq!(estimate(&[call], words), MESSAGE_OVERHEAD + 2 + MESSAGE_OVERHEAD + 2);
    }
}
