//! A reply that makes tool calls, written before its calls are made, or left to the first
//! call's own write (`runtime/joined.rs`; docs/decisions.md, "A send's reply commits with its
//! target's start").

use serde_json::Value;

use super::{Ending, ModelRequest, ModelResponse, Turn, appended_seq, follow, lock};
use crate::runtime::fence::fenced;
use crate::store::WriteOp;

impl Turn<'_> {
    /// Records the reply that made `calls`: written now, or left to the first call's write when
    /// the store commits in order and that call's every effect is that one write.
    pub(super) async fn record_calls(
        &mut self,
        response: &ModelResponse,
        request: &mut ModelRequest,
        calls: &[(String, String, Value)],
    ) -> Result<(), Ending> {
        match calls.first() {
            Some((id, name, arguments)) if self.joins(name, arguments) => {
                self.leave_reply(response, request, id);
                Ok(())
            }
            _ => self.record_reply(response, request).await,
        }
    }

    fn joins(&self, name: &str, arguments: &Value) -> bool {
        self.rt.store().commits_in_order()
            && arguments.is_object()
            && self
                .tools
                .iter()
                .find(|t| t.name() == name)
                .is_some_and(|tool| tool.joins_reply(&self.ctx, arguments))
    }

    /// The reply in the model's view at once, its writes left to the call `call`.
    fn leave_reply(&mut self, response: &ModelResponse, request: &mut ModelRequest, call: &str) {
        let (append, tokens, message) = self.reply(response, request);
        let tokens = WriteOp::Patch {
            key: self.key.clone(),
            patch: Box::new(tokens),
        };
        let ops = fenced(&self.fence, vec![append, tokens]);
        lock(&self.partial).joined.leave(ops, call);
        // The transcript's next message, however it is written: the next append's seq says
        // whether it was.
        self.last_seq = self.last_seq.map(|seq| seq + 1);
        request.messages.push(message);
    }

    /// Once the first call ended: a reply sent with a write whose answer the call did not hear
    /// is looked for in the transcript of `session_id` (left to be written when it is not there).
    pub(super) async fn settle_reply(&mut self, session_id: &str) -> Result<(), Ending> {
        let joined = lock(&self.partial).joined.clone();
        self.rt
            .settle_sent(&joined, session_id)
            .await
            .map_err(|e| Ending::failed(e.to_string()))
    }

    /// Appends the model's reply with its token counts, in one commit.
    pub(super) async fn record_reply(
        &mut self,
        response: &ModelResponse,
        request: &mut ModelRequest,
    ) -> Result<(), Ending> {
        let (append, tokens, message) = self.reply(response, request);
        let turn = vec![
            self.fence.clone(),
            append,
            WriteOp::Patch {
                key: self.key.clone(),
                patch: Box::new(tokens),
            },
        ];
        let outcomes = self
            .rt
            .store()
            .write_batch(turn)
            .await
            .map_err(|e| Ending::failed(e.to_string()))?;
        self.last_seq = appended_seq(&outcomes).and_then(|seq| follow(self.last_seq, seq));
        request.messages.push(message);
        Ok(())
    }
}
