//! World commands: checked here, answered here or forwarded to the agent that carries them out.

use super::*;

impl Coordinator {
    pub(super) fn reply(
        &self,
        request: &WorldRequest,
        status: ReplyStatus,
        message: String,
    ) -> Result<()> {
        self.io.replies.write(WorldReply {
            request_id: request.request_id.clone(),
            status,
            message,
            states: Vec::new(),
        })?;
        Ok(())
    }

    pub(super) fn answer(&mut self, request: WorldRequest) -> Result<()> {
        if let Err(reason) = check_command(&self.scenario, &request.command) {
            return self.reply(&request, ReplyStatus::Failed, reason);
        }
        let agent = request.command.agent_id.clone();
        match request.command.kind {
            WorldCommandKind::Pause => {
                self.paused = true;
                // Tell everyone the clock stands (same frame, paused).
                self.write_tick(self.tick(self.frame))?;
                self.reply(
                    &request,
                    ReplyStatus::Success,
                    format!("paused at frame {}", self.frame),
                )
            }
            WorldCommandKind::Resume => {
                self.paused = false;
                self.reply(
                    &request,
                    ReplyStatus::Success,
                    format!("resumed at frame {}", self.frame),
                )
            }
            WorldCommandKind::GetState => {
                let states: Vec<AgentState> = self
                    .latest
                    .values()
                    .filter(|s| agent.is_empty() || s.agent_id == agent)
                    .cloned()
                    .collect();
                self.io.replies.write(WorldReply {
                    request_id: request.request_id.clone(),
                    status: ReplyStatus::Success,
                    message: format!("{} states at frame {}", states.len(), self.frame),
                    states,
                })?;
                Ok(())
            }
            WorldCommandKind::Teleport | WorldCommandKind::SetControl => {
                if !self.members.contains(&agent) {
                    return self.reply(
                        &request,
                        ReplyStatus::Failed,
                        format!("agent '{agent}' is not running"),
                    );
                }
                self.reply(
                    &request,
                    ReplyStatus::Pending,
                    format!("forwarded to agent/{agent}"),
                )
            }
        }
    }
}
