//! A response's output items as they come into being, and, for a streamed response, the events
//! that announce them (`response.output_item.added`, the item's own events, `...done`), each
//! with the next `sequence_number`. A response that is not streamed gets the same items.

use serde_json::{Value, json};
use tokio::sync::mpsc;

/// One server-sent event, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    /// Its `type`, also the SSE `event:` name.
    pub(crate) kind: &'static str,
    /// The whole event object, `type` and `sequence_number` included.
    pub(crate) data: Value,
}

/// The items of one response, and where their events go.
#[derive(Debug)]
pub(crate) struct Output {
    items: Vec<Value>,
    events: Option<mpsc::Sender<Event>>,
    sequence: u64,
}

/// A new item id with its type's prefix (`msg_`, `mcp_`, ...).
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

impl Output {
    /// Items only.
    pub(crate) fn collected() -> Output {
        Output { items: Vec::new(), events: None, sequence: 0 }
    }

    /// Items and events, sent on `events` (a client that went away is not waited for).
    pub(crate) fn streamed(events: mpsc::Sender<Event>) -> Output {
        Output { items: Vec::new(), events: Some(events), sequence: 0 }
    }

    /// The items so far.
    pub(crate) fn items(&self) -> &[Value] {
        &self.items
    }

    /// Sends one event (its `type` and `sequence_number` are added).
    pub(crate) async fn event(&mut self, kind: &'static str, mut fields: Value) {
        let Some(events) = &self.events else { return };
        if let Value::Object(map) = &mut fields {
            map.insert("type".into(), kind.into());
            map.insert("sequence_number".into(), self.sequence.into());
        }
        self.sequence += 1;
        // A client that went away no longer reads; the response is still finished and stored.
        let _ = events.send(Event { kind, data: fields }).await;
    }

    /// Starts an item (`response.output_item.added`); returns its index.
    pub(crate) async fn add(&mut self, item: Value) -> usize {
        let index = self.items.len();
        self.items.push(item.clone());
        self.event("response.output_item.added", json!({ "output_index": index, "item": item }))
            .await;
        index
    }

    /// Finishes an item as `item` (`response.output_item.done`).
    pub(crate) async fn done(&mut self, index: usize, item: Value) {
        self.items[index] = item.clone();
        self.event("response.output_item.done", json!({ "output_index": index, "item": item }))
            .await;
    }

    /// An item with no events of its own between added and done.
    pub(crate) async fn whole(&mut self, item: Value) -> usize {
        let index = self.add(item.clone()).await;
        self.done(index, item).await;
        index
    }

    /// An item's id.
    pub(crate) fn id_of(&self, index: usize) -> String {
        self.items[index]["id"].as_str().unwrap_or_default().to_owned()
    }
}

/// An assistant message being written.
pub(crate) struct Writing {
    index: usize,
    id: String,
}

impl Writing {
    /// Starts the message (its item and its one `output_text` part).
    pub(crate) async fn start(output: &mut Output) -> Writing {
        let id = new_id("msg");
        let item = json!({
            "type": "message", "id": id, "status": "in_progress", "role": "assistant",
            "content": [],
        });
        let index = output.add(item).await;
        output
            .event(
                "response.content_part.added",
                json!({
                    "item_id": id, "output_index": index, "content_index": 0,
                    "part": { "type": "output_text", "text": "", "annotations": [] },
                }),
            )
            .await;
        Writing { index, id }
    }

    /// More text.
    pub(crate) async fn push(&mut self, output: &mut Output, delta: &str) {
        output
            .event(
                "response.output_text.delta",
                json!({
                    "item_id": self.id, "output_index": self.index, "content_index": 0,
                    "delta": delta, "logprobs": [],
                }),
            )
            .await;
    }

    /// Ends it with `text` (the whole text, as the model's turn has it).
    pub(crate) async fn finish(self, output: &mut Output, text: &str) {
        let part = json!({ "type": "output_text", "text": text, "annotations": [] });
        output
            .event(
                "response.output_text.done",
                json!({
                    "item_id": self.id, "output_index": self.index, "content_index": 0,
                    "text": text, "logprobs": [],
                }),
            )
            .await;
        output
            .event(
                "response.content_part.done",
                json!({
                    "item_id": self.id, "output_index": self.index, "content_index": 0,
                    "part": part,
                }),
            )
            .await;
        let item = json!({
            "type": "message", "id": self.id, "status": "completed", "role": "assistant",
            "content": [part],
        });
        output.done(self.index, item).await;
    }
}
