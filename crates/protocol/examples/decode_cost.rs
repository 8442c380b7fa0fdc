//! What reading a method's params costs, for BENCHMARKS.md: `decode_cost checked` reads a
//! `chat.send` and a `sessions.list` 100,000 times each through `decode::params` (the misuse
//! rule's checked reader); `decode_cost plain` the same through serde_path_to_error over the
//! value, as before it. Count instructions with `valgrind --tool=callgrind`.

use serde_json::json;
use switchboard_protocol::runs::ChatSendParams;
use switchboard_protocol::sessions::SessionsListParams;

fn main() {
    let checked = std::env::args().nth(1).as_deref() != Some("plain");
    let send = json!({"sessionKey": "agent:main:main", "message": "hello there", "idempotencyKey": "k-1", "deliver": false});
    let list = json!({"limit": 200, "activeMinutes": 60, "kinds": ["main", "group"], "includeGlobal": true});
    let mut total = 0usize;
    for _ in 0..100_000 {
        if checked {
            let p: ChatSendParams =
                switchboard_protocol::decode::params("chat.send", Some(send.clone()))
                    .unwrap_or_default();
            let l: SessionsListParams =
                switchboard_protocol::decode::params("sessions.list", Some(list.clone()))
                    .unwrap_or_default();
            total += p.message.len() + l.limit.unwrap_or_default() as usize;
        } else {
            let mut send = send.clone();
            send.as_object_mut().map(|m| m.remove("deliver"));
            let mut list = list.clone();
            list.as_object_mut().map(|m| m.remove("includeGlobal"));
            let p: ChatSendParams = serde_path_to_error::deserialize(send).unwrap_or_default();
            let l: SessionsListParams = serde_path_to_error::deserialize(list).unwrap_or_default();
            total += p.message.len() + l.limit.unwrap_or_default() as usize;
        }
    }
    println!("{total}");
}
