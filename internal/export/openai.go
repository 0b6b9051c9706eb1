package export

import (
	"encoding/json"

	"github.com/pchronicle/pchronicle/internal/jsonx"
	"github.com/pchronicle/pchronicle/internal/model"
)

type chatLine struct {
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

var roles = map[string]string{
	model.SourceSystem: "system",
	model.SourceUser:   "user",
	model.SourceAgent:  "assistant",
	model.SourceTool:   "tool",
}

// OpenAIMessages returns a Storyline as one chat-completions line
// {"messages": [...]}: an assistant message carries its tool_calls and is
// followed by one tool message per linked result (steps that only carried
// results are folded into those). A step observation that is not a tool
// result (terminus-style command output) follows as a user message. Roles
// other than system/user/assistant/tool are written as user.
func OpenAIMessages(sl *model.Storyline) ([]byte, error) {
	return jsonx.Marshal(openAIChat(sl))
}

// openAIChat is a Storyline as chat-completions messages (OpenAIMessages).
func openAIChat(sl *model.Storyline) chatLine {
	calls, carriers := callsByStep(sl), resultCarriers(sl)
	line := chatLine{Messages: []chatMessage{}}
	for i := range sl.Steps {
		st := &sl.Steps[i]
		if carriers[st.StepID] && st.Source == model.SourceTool {
			continue
		}
		role, ok := roles[st.Source]
		if !ok {
			role = "user"
		}
		msg := chatMessage{Role: role, Content: chatContent(st), ReasoningContent: model.Deref(st.Reasoning)}
		stepCalls := calls[st.StepID]
		for _, tc := range stepCalls {
			args := model.Deref(tc.Arguments)
			if args == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: tc.ToolCallID, Type: "function", Function: chatFunction{Name: tc.FunctionName, Arguments: args}})
		}
		line.Messages = append(line.Messages, msg)
		for _, tc := range stepCalls {
			if hasResult(tc) {
				line.Messages = append(line.Messages, chatMessage{Role: "tool", ToolCallID: tc.ToolCallID, Content: textJSON(model.Deref(tc.Result))})
			}
		}
		if st.Observation != nil && len(stepCalls) == 0 {
			line.Messages = append(line.Messages, chatMessage{Role: "user", Content: textJSON(*st.Observation)})
		}
	}
	return line
}

// chatContent is the message content: multimodal parts as their array,
// null for a message that only calls tools, else the text.
func chatContent(st *model.Step) json.RawMessage {
	if st.MessageValue == nil {
		return json.RawMessage("null")
	}
	if st.MessageKind == "multimodal" {
		if raw := rawJSON(*st.MessageValue, '['); raw != nil {
			return raw
		}
	}
	return textJSON(*st.MessageValue)
}

type openaiWriter struct{ lines }

func (o *openaiWriter) Write(_ string, sl *model.Storyline) error {
	b, err := OpenAIMessages(sl)
	if err != nil {
		return err
	}
	return o.write(b)
}
