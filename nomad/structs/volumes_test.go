package structs_test

import (
	"encoding/json"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Volume validation: a host volume with a source, mounted at an absolute
// path, passes; CSI and its keys are refused by name; a mount must name a
// group volume, as upstream, whatever the job was written in (JSON skips
// the parser's checks).
func TestJob_Validate_Volumes(t *testing.T) {
	const g = "Task group web validation failed: "
	host := func(v *structs.VolumeRequest, ms ...*structs.VolumeMount) func(*structs.Job) {
		return func(j *structs.Job) {
			j.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": v}
			j.TaskGroups[0].Tasks[0].VolumeMounts = ms
		}
	}
	ok := &structs.VolumeRequest{Name: "data", Type: structs.VolumeTypeHost, Source: "data"}
	mount := &structs.VolumeMount{Volume: "data", Destination: "/srv/data", PropagationMode: structs.VolumeMountPropagationPrivate}
	cases := []struct {
		name   string
		mutate func(*structs.Job)
		want   []string
	}{
		{"host volume mounted", host(ok, mount), nil},
		{"csi", host(&structs.VolumeRequest{Type: structs.VolumeTypeCSI, Source: "x"}),
			[]string{g + `Volume data: type "csi" is not supported: CSI volumes are not implemented by this version; use a host volume`}},
		{"unknown type", host(&structs.VolumeRequest{Type: "nfs", Source: "x"}), []string{g + "Volume data has unrecognised type nfs"}},
		{"csi keys", host(&structs.VolumeRequest{Type: structs.VolumeTypeHost, Source: "x", PerAlloc: true, AccessMode: "single-node-writer",
			AttachmentMode: "file-system", MountOptions: &structs.CSIMountOptions{FSType: "ext4"}}), []string{
			g + "Volume data: per_alloc is not supported: it names CSI volumes per allocation, and CSI is not implemented by this version",
			g + "Volume data: host volumes cannot have an access mode (access_mode is for CSI volumes, not implemented by this version)",
			g + "Volume data: host volumes cannot have an attachment mode (attachment_mode is for CSI volumes, not implemented by this version)",
			g + "Volume data: host volumes cannot have mount options (mount_options is for CSI volumes, not implemented by this version)",
		}},
		{"empty source", host(&structs.VolumeRequest{Type: structs.VolumeTypeHost}), []string{g + "Volume data has an empty source"}},
		{"undefined volume", host(ok, &structs.VolumeMount{Volume: "logs", Destination: "/logs"}),
			[]string{g + "Task web: Volume Mount 1 references undefined volume logs"}},
		{"bad mount", host(ok, &structs.VolumeMount{Destination: "rel", PropagationMode: "shared"}), []string{
			g + "Task web: Volume Mount 1 references an empty volume",
			g + `Task web: Volume Mount 1: destination "rel" must be an absolute path inside the task`,
			g + `Task web: Volume Mount 1: propagation_mode "shared" must be one of "private", "host-to-task" or "bidirectional"`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := mock.Job()
			tc.mutate(job)
			must.Eq(t, tc.want, validationProblems(t, job))
		})
	}
}

// A mount is read-only when the node's volume, the group's request or the
// task's mount says so (upstream's rule), and a writer never fits a
// read-only node volume.
func TestHostVolume_ReadOnlyRules(t *testing.T) {
	rw := &structs.ClientHostVolumeConfig{Name: "d", Path: "/d"}
	ro := &structs.ClientHostVolumeConfig{Name: "d", Path: "/d", ReadOnly: true}
	want := &structs.VolumeRequest{Type: structs.VolumeTypeHost, Source: "d"}
	wantRO := &structs.VolumeRequest{Type: structs.VolumeTypeHost, Source: "d", ReadOnly: true}
	m := &structs.VolumeMount{}
	mRO := &structs.VolumeMount{ReadOnly: true}

	must.False(t, structs.MountReadOnly(rw, want, m))
	must.True(t, structs.MountReadOnly(ro, want, m))
	must.True(t, structs.MountReadOnly(rw, wantRO, m))
	must.True(t, structs.MountReadOnly(rw, want, mRO))

	node := mock.Node()
	node.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"d": ro}
	must.False(t, structs.HostVolumeFits(node, want))
	must.True(t, structs.HostVolumeFits(node, wantRO))
	node.HostVolumes["d"] = rw
	must.True(t, structs.HostVolumeFits(node, want))
	node.HostVolumes = nil
	must.False(t, structs.HostVolumeFits(node, wantRO))
}

// Copies of groups, tasks and nodes do not share their volume maps and
// mounts: objects from the state store are immutable, and a scheduler or
// endpoint editing a copy must not change them.
func TestVolumes_CopyIsDeep(t *testing.T) {
	job := mock.Job()
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"d": {Type: structs.VolumeTypeHost, Source: "d"}}
	job.TaskGroups[0].Tasks[0].VolumeMounts = []*structs.VolumeMount{{Volume: "d", Destination: "/d"}}
	c := job.Copy()
	c.TaskGroups[0].Volumes["d"].Source = "other"
	c.TaskGroups[0].Tasks[0].VolumeMounts[0].Destination = "/other"
	must.Eq(t, "d", job.TaskGroups[0].Volumes["d"].Source)
	must.Eq(t, "/d", job.TaskGroups[0].Tasks[0].VolumeMounts[0].Destination)

	node := mock.Node()
	node.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"d": {Name: "d", Path: "/d"}}
	nc := node.Copy()
	nc.HostVolumes["d"].Path = "/x"
	must.Eq(t, "/d", node.HostVolumes["d"].Path)
}

// job plan's diff shows an added volume and mount, so an operator sees the
// destructive update coming.
func TestJobDiff_Volumes(t *testing.T) {
	old := mock.Job()
	next := old.Copy()
	next.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"d": {Name: "d", Type: structs.VolumeTypeHost, Source: "data"}}
	next.TaskGroups[0].Tasks[0].VolumeMounts = []*structs.VolumeMount{{Volume: "d", Destination: "/d"}}
	d, err := old.Diff(next, true)
	must.NoError(t, err)
	must.Len(t, 1, d.TaskGroups)
	must.Eq(t, "Edited", d.TaskGroups[0].Type)
	b, err := json.Marshal(d.TaskGroups[0])
	must.NoError(t, err)
	must.StrContains(t, string(b), `"Name":"d.Source","Old":"","New":"data"`)
	must.StrContains(t, string(b), `"New":"/d"`)
}
