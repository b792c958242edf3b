package wire

// The predefined task types of seed 000 §3.3: ids that mean the same task
// on every agent. A handler runs one when its task type is the id, or
// declares it among its task type's capabilities (a handler of
// "acme.summarize" with capabilities ["summarization"]); a directory
// query by task_type for one of these ids finds both.

// PredefinedTaskType is one id of seed 000 §3.3 with its meaning.
type PredefinedTaskType struct {
	Type        string `json:"type" msgpack:"type"`
	Name        string `json:"name" msgpack:"name"`
	Description string `json:"description" msgpack:"description"`
}

// PredefinedTaskTypes are the 15 ids of seed 000 §3.3, in the seed's
// order (names and descriptions translated).
var predefinedTaskTypes = [...]PredefinedTaskType{
	{"text_generation", "Text generation", "Generates natural-language text from a prompt."},
	{"text_analysis", "Text analysis", "Classifies text, analyses sentiment, recognises entities."},
	{"summarization", "Summarization", "Summarises a long text into a short one."},
	{"translation", "Translation", "Translates between languages."},
	{"code_generation", "Code generation", "Generates source code from requirements."},
	{"code_review", "Code review", "Reviews code and finds likely problems."},
	{"image_generation", "Image generation", "Generates an image from a text description."},
	{"image_analysis", "Image analysis", "Recognises and analyses the content of an image."},
	{"audio_transcription", "Audio transcription", "Turns speech audio into text."},
	{"audio_generation", "Audio generation", "Synthesises speech from text."},
	{"video_generation", "Video generation", "Generates video content from a description."},
	{"data_analysis", "Data analysis", "Analyses and visualises structured data."},
	{"search_retrieval", "Search and retrieval", "Retrieves information from a knowledge base or the internet."},
	{"planning", "Planning", "Breaks a complex task into executable subtasks."},
	{"reasoning", "Reasoning", "Performs multi-step logical reasoning and decisions."},
}

// PredefinedTaskTypes returns the 15 predefined task types.
func PredefinedTaskTypes() []PredefinedTaskType {
	out := make([]PredefinedTaskType, len(predefinedTaskTypes))
	copy(out, predefinedTaskTypes[:])
	return out
}

// LookupTaskType returns the predefined task type id, if it is one.
func LookupTaskType(id string) (PredefinedTaskType, bool) {
	for _, t := range predefinedTaskTypes {
		if t.Type == id {
			return t, true
		}
	}
	return PredefinedTaskType{}, false
}

// Declares reports whether t runs the predefined (or any) task type id:
// its type is id, or its capabilities name id.
func (t *SupportedTaskType) Declares(id string) bool {
	if t.Type == id {
		return true
	}
	for _, c := range t.Capabilities {
		if c == id {
			return true
		}
	}
	return false
}
