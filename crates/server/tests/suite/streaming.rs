//! A reply streams in pieces: each event carries the new text, numbered in its run, and the
//! whole text so far only now and then (issue 59 point 5). What a client rebuilds from the
//! pieces is the reply it is given at the end.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::harness::TestGateway;

/// What a client rebuilds from a stream's events: the text added up piece by piece (a piece
/// marked `replace` starts it anew), checked against every snapshot that rides along.
#[derive(Default)]
struct Rebuilt {
    text: String,
    seqs: Vec<u64>,
    snapshots: usize,
}

impl Rebuilt {
    fn add(&mut self, piece: &str, seq: &Value, replace: &Value, snapshot: Option<&str>) {
        self.seqs.push(seq.as_u64().expect("a piece has a seq"));
        match replace == &json!(true) {
            true => self.text = piece.to_string(),
            false => self.text.push_str(piece),
        }
        if let Some(whole) = snapshot {
            assert_eq!(whole, self.text, "a snapshot is the pieces so far");
            self.snapshots += 1;
        }
    }
}

#[tokio::test]
async fn streamed_events_carry_pieces_whose_concatenation_is_the_final_reply() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    // 3,000 words: the built-in model streams one piece a word, as fast as it can.
    let words: Vec<String> = (0..3000).map(|i| format!("w{i}")).collect();
    let reply = words.join(" ");
    let started = client
        .request(
            "chat.send",
            json!({"sessionKey": "main", "message": format!("@reply {reply}"), "idempotencyKey": "s1"}),
        )
        .await
        .unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();

    let (mut agent, mut chat) = (Rebuilt::default(), Rebuilt::default());
    let mut frame_bytes = 0;
    let final_text = loop {
        let event = client.next_event().await.unwrap();
        let p = &event.payload;
        if p["runId"] != run_id.as_str() {
            continue;
        }
        frame_bytes += p.to_string().len();
        match (
            event.event.as_str(),
            p["stream"].as_str(),
            p["state"].as_str(),
        ) {
            ("agent", Some("assistant"), _) => {
                let d = &p["data"];
                let piece = d["delta"].as_str().expect("an assistant event has a delta");
                agent.add(piece, &d["seq"], &d["replace"], d["text"].as_str());
            }
            ("chat", _, Some("delta")) => {
                let piece = p["deltaText"].as_str().expect("a chat delta has deltaText");
                let snapshot = p["message"]["content"][0]["text"].as_str();
                chat.add(piece, &p["seq"], &p["replace"], snapshot);
            }
            ("chat", _, Some("final")) => {
                break p["message"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string();
            }
            _ => {}
        }
    };
    assert_eq!(final_text, reply);
    for rebuilt in [&agent, &chat] {
        assert_eq!(rebuilt.text, final_text);
        assert_eq!(
            rebuilt.seqs,
            (1..=3000).collect::<Vec<u64>>(),
            "one piece a word, numbered"
        );
        // The first piece carries the text so far (a client that shows only snapshots sees the
        // reply start); after it, the snapshot rides along at most every 75 ms, and the 3,000
        // pieces take far less than 75 ms × 750 however loaded the machine is.
        assert!(rebuilt.snapshots >= 1);
        assert!(rebuilt.snapshots < 750, "{} snapshots", rebuilt.snapshots);
    }
    // One copy of the whole reply per event would be 3,000 × 2 × ~10 KB: 60 MB.
    assert!(
        frame_bytes < 8 * 1024 * 1024,
        "{frame_bytes} bytes of events"
    );

    let waited = client
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 5000}))
        .await
        .unwrap();
    assert_eq!(waited["reply"], json!(reply));
    gw.stop().await;
}
