package mock

import (
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Node returns a ready node in dc1 with 4000 MHz, 8 GiB and both drivers.
func Node() *structs.Node {
	now := time.Unix(1_700_000_000, 0)
	id := structs.GenerateUUID()
	return &structs.Node{
		ID:         id,
		SecretID:   structs.GenerateUUID(),
		Datacenter: "dc1",
		Name:       "node-" + id[:8],
		HTTPAddr:   "127.0.0.1:4646",
		NodePool:   structs.DefaultNodePool,
		Attributes: map[string]string{
			"kernel.name":        "linux",
			"arch":               "amd64",
			"nomad.version":      "0.1.0",
			"driver.raw_exec":    "1",
			"driver.mock_driver": "1",
			"unique.hostname":    "host-" + id[:8],
		},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: structs.NodeMemoryResources{MemoryMB: 8192},
			Disk:   structs.NodeDiskResources{DiskMB: 100 * 1024},
		},
		ReservedResources: &structs.NodeReservedResources{
			Cpu:    structs.NodeReservedCpuResources{CpuShares: 100},
			Memory: structs.NodeReservedMemoryResources{MemoryMB: 256},
			Disk:   structs.NodeReservedDiskResources{DiskMB: 4 * 1024},
		},
		Drivers: map[string]*structs.DriverInfo{
			"raw_exec":    {Detected: true, Healthy: true, UpdateTime: now},
			"mock_driver": {Detected: true, Healthy: true, UpdateTime: now},
		},
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Status:                structs.NodeStatusReady,
		StatusUpdatedAt:       now.Unix(),
	}
}

// Job returns a service job "web" with one group of 10 mock_driver tasks.
func Job() *structs.Job {
	id := "mock-service-" + structs.GenerateUUID()
	job := &structs.Job{
		ID:          id,
		Name:        "my-job",
		Namespace:   structs.DefaultNamespace,
		Region:      structs.DefaultRegion,
		Type:        structs.JobTypeService,
		Priority:    structs.JobDefaultPriority,
		Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name:  "web",
			Count: 10,
			Tasks: []*structs.Task{{
				Name:      "web",
				Driver:    "mock_driver",
				Config:    map[string]any{"run_for": "500ms"},
				Env:       map[string]string{"FOO": "bar"},
				Resources: &structs.Resources{CPU: 500, MemoryMB: 256},
			}},
		}},
		Meta:           map[string]string{"owner": "armon"},
		Status:         structs.JobStatusPending,
		Version:        0,
		CreateIndex:    42,
		ModifyIndex:    99,
		JobModifyIndex: 99,
	}
	job.Canonicalize()
	return job
}

// BatchJob returns a batch job with one group of 10 short mock tasks.
func BatchJob() *structs.Job {
	job := Job()
	job.ID = "mock-batch-" + structs.GenerateUUID()
	job.Type = structs.JobTypeBatch
	job.TaskGroups[0].RestartPolicy = structs.NewRestartPolicy(structs.JobTypeBatch)
	job.TaskGroups[0].ReschedulePolicy = structs.NewReschedulePolicy(structs.JobTypeBatch)
	job.TaskGroups[0].Tasks[0].RestartPolicy = nil
	job.Canonicalize()
	return job
}

// Alloc returns a running allocation of Job() on a fresh node ID.
func Alloc() *structs.Allocation {
	job := Job()
	tg := job.TaskGroups[0]
	return &structs.Allocation{
		ID:                 structs.GenerateUUID(),
		EvalID:             structs.GenerateUUID(),
		NodeID:             structs.GenerateUUID(),
		Namespace:          structs.DefaultNamespace,
		TaskGroup:          tg.Name,
		Name:               structs.AllocName(job.ID, tg.Name, 0),
		JobID:              job.ID,
		Job:                job,
		AllocatedResources: structs.NewAllocatedResources(tg),
		Metrics:            &structs.AllocMetric{},
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
	}
}

// AllocForNode returns Alloc() placed on node.
func AllocForNode(node *structs.Node) *structs.Allocation {
	a := Alloc()
	a.NodeID = node.ID
	a.NodeName = node.Name
	return a
}

// Eval returns a pending job-register evaluation.
func Eval() *structs.Evaluation {
	now := time.Unix(1_700_000_000, 0).UnixNano()
	return &structs.Evaluation{
		ID:          structs.GenerateUUID(),
		Namespace:   structs.DefaultNamespace,
		Priority:    50,
		Type:        structs.JobTypeService,
		TriggeredBy: structs.EvalTriggerJobRegister,
		JobID:       structs.GenerateUUID(),
		Status:      structs.EvalStatusPending,
		CreateTime:  now,
		ModifyTime:  now,
	}
}
