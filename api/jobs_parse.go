package api

import "net/http"

// ParseHCLOpts is ParseHCL with the whole request, Variables included.
func (j *Jobs) ParseHCLOpts(req *JobsParseRequest) (*Job, error) {
	var job Job
	if _, err := j.client.write(http.MethodPost, "/v1/jobs/parse", req, &job, nil); err != nil {
		return nil, err
	}
	return &job, nil
}
